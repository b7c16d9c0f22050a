"""[check] numbers as several regexes: they are read as one alternation (verify/measure.py), so a
pattern with leading global flags, valid alone, must still work beside the others (LULESH's
configuration had one, and every run of its baseline failed its own checks)."""

from __future__ import annotations

import doctest
from pathlib import Path

from nvcc_opt.config import load
from nvcc_opt.verify import measure
from nvcc_opt.verify.checks import RunOutput

TOML = """\
[build]
command = "true"
[run]
command = ["true"]
[time]
source = "wall"
[check]
numbers = ['energy = (\\S+)', '(?m)^spread = (\\S+)$', '(?i)COUNT: (\\d+)']
rtol = 1e-6
"""
OUT = "energy = 1.5\nspread = 2e-12\nnote: spread = 9 (not at a line start)\ncount: 7\n"


def _config(tmp_path: Path):  # type: ignore[no-untyped-def]
    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text(TOML, encoding="utf-8")
    return load(tmp_path)


def test_patterns_with_global_flags_combine(tmp_path: Path) -> None:
    config = _config(tmp_path)
    base = RunOutput(0, OUT, "", {})
    assert measure.check(config, base, base).ok
    moved = RunOutput(0, OUT.replace("spread = 2e-12", "spread = 3e-12"), "", {})
    result = measure.check(config, moved, base)
    assert not result.ok and result.reasons[0].startswith("numbers_differ"), result.reasons
    upper = RunOutput(0, OUT.replace("count: 7", "COUNT: 8"), "", {})
    assert not measure.check(config, upper, base).ok  # (?i) still applies to its own pattern


def test_the_doctests() -> None:
    assert doctest.testmod(measure).failed == 0
