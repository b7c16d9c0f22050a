"""The red team on a GPU: every candidate of tests/redteam/classes, tests/redteam/runtime and
tests/redteam/allowlist built into the example application and judged by the full final
verification (`Benchmark.evaluate` with `FinalChecks`: static lines, build, output checks, the
channel, fresh inputs, the runtime state check, the sanitizer, timing). A cheat must be rejected
with a reason that starts with one of its expected prefixes (one that expects `uncredited` need
only not be credited: not "improved", or with a caveat); an honest rewrite must not be
rejected. Marked `gpu`: skipped without one.

Expected prefixes: a `classes/` file's `// expect:` header (tests/redteam_files.py); a `runtime/`
file's name (`<reason>__<what>.cu`); an `allowlist/` cheat's any static line. With
NVCC_OPT_REDTEAM_REPORT set, each candidate's verdict is appended to that JSON file (a list), so a
run's report can be kept (under pytest-xdist, to that name + `.gwN`, one file per worker). One
configured example serves every candidate (a private tree pair per region). The cheats a static line
refuses are judged on any machine by tests/test_redteam_static.py and skipped here unless
NVCC_OPT_REDTEAM_ALL is set; what is left is the run-time cheats (a build and a few runs, ~35 s) and
the honest rewrites (the whole verification with 6 timed pairs, ~45-60 s each, measured on two); `-k
classes/` and the like run a folder at a time."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.records import unestablished
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.final import FinalChecks
from nvcc_opt.verify.kernels import region_kernels
from nvcc_opt.verify.verdict import Verdict
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import gpu_available
from tests.redteam_files import (
    EXAMPLE,
    REGION_SOURCES,
    UNCREDITED,
    all_candidates,
    expectation,
    static_only,
)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU"),
]

ALL = "NVCC_OPT_REDTEAM_ALL"  # also the cheats static lines refuse (tests/test_redteam_static.py)
CANDIDATES = [
    p for p in all_candidates() if os.environ.get(ALL) or not static_only(expectation(p)[1])
]
REPEATS = 6
REPORT = "NVCC_OPT_REDTEAM_REPORT"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("build"))
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    subprocess.run(["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", root / "build"], check=True, capture_output=True)
    yield root
    mp.undo()


@pytest.fixture(scope="module")
def benches(project: Path, exe: str) -> Iterator[Callable[[str], Benchmark]]:
    """One Benchmark per region, kept: its private trees and baseline output serve every
    candidate of the region."""
    made: dict[str, Benchmark] = {}

    def bench(region: str) -> Benchmark:
        if region not in made:
            found = Region.find(project / "src" / REGION_SOURCES[region], region)
            made[region] = Benchmark(
                load(project), found, ProcessRunner(), launcher=exe, label=f"red-{region}"
            )
        return made[region]

    yield bench
    for bench_of_region in made.values():
        bench_of_region.close()


@pytest.mark.parametrize("path", CANDIDATES, ids=[f"{p.parent.name}/{p.stem}" for p in CANDIDATES])
def test_candidate_is_judged_as_expected(benches: Callable[[str], Benchmark], path: Path) -> None:
    region, expected = expectation(path)
    bench = benches(region)
    code = path.read_text(encoding="utf-8")
    notes: list[str] = []
    started = time.perf_counter()
    kernels = region_kernels(bench.region.text, code)
    checks = FinalChecks(bench.config, bench.runner, bench.gpu, notes, bench.channel, kernels)
    verdict = bench.evaluate(code, [], REPEATS, checks)
    passed = _as_expected(verdict, expected, notes)
    _report(path, region, expected, verdict, notes, passed, time.perf_counter() - started)
    if not expected:
        assert verdict.correct and verdict.status != "rejected", verdict.reasons
        return
    if expected == (UNCREDITED,):
        assert passed, f"its speedup is credited: {verdict.status}, {verdict.reasons}, {notes}"
        return
    assert verdict.status == "rejected", verdict
    assert passed, f"rejected, but for none of {expected}: {verdict.reasons}"


def _as_expected(verdict: Verdict, expected: tuple[str, ...], notes: list[str]) -> bool:
    if not expected:
        return verdict.correct and verdict.status != "rejected"
    if expected == (UNCREDITED,):  # any verdict but a credited speedup
        return verdict.status != "improved" or bool(unestablished([*verdict.reasons, *notes]))
    return verdict.status == "rejected" and any(r.startswith(expected) for r in verdict.reasons)


def _report(
    path: Path,
    region: str,
    expected: tuple[str, ...],
    verdict: Verdict,
    notes: list[str],
    passed: bool,
    seconds: float,
) -> None:
    """Append this candidate's verdict to the report file, when one is named."""
    target = os.environ.get(REPORT)
    if not target:
        return
    worker = os.environ.get("PYTEST_XDIST_WORKER")  # one file per worker: no lost rows
    report = Path(f"{target}.{worker}") if worker else Path(target)
    rows = json.loads(report.read_text(encoding="utf-8")) if report.is_file() else []
    rows.append(
        {
            "file": f"{path.parent.name}/{path.name}",
            "region": region,
            "expected": list(expected) or "accept",
            "as_expected": passed,
            "status": verdict.status,
            "correct": verdict.correct,
            "reasons": list(verdict.reasons),
            "notes": notes,
            "seconds": round(seconds, 1),
        }
    )
    partial = report.with_name(report.name + ".tmp")
    partial.write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    partial.replace(report)
