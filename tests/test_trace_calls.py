"""benchmarks/trace_calls.py on traces the H200 bench packed (committed results)."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "trace_calls.py"
HISTOGRAM = ROOT / "benchmarks" / "results" / "gpu-2026-12-03" / "histogram" / "traces.tar.gz"


def _module() -> object:
    spec = importlib.util.spec_from_file_location("trace_calls", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_each_timed_call_gives_its_verdict_pairs_and_speedup() -> None:
    found = list(_module().calls(HISTOGRAM))  # type: ignore[attr-defined]
    assert [(v, p, s) for v, p, s, _ in found] == [
        ("improved", 10, 5.809),
        ("no improvement", 4, 1.0),
        ("no improvement", 4, 1.0),
    ]
    assert all(seconds > 0 for *_, seconds in found)


def test_the_table_groups_calls_by_verdict_and_pairs() -> None:
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(HISTOGRAM)], capture_output=True, text=True, check=True
    )
    assert "3 timed benchmark_code calls in 1 tarballs" in done.stdout
    assert "| no improvement | 4 | 2 |" in done.stdout
    assert "| improved | 10 | 1 |" in done.stdout
