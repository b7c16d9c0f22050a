"""A timed run that hangs is stopped after ten times the check runs' time (at least a minute, at
most [run] timeout_s), and the error says whose build hung; the scripted process runner stands in
for the GPU application."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.verify.measure import Build, RunHung, hang_limit, measure
from nvcc_opt.workspace.runner import Completed, ScriptedRunner

FIXTURE = Path(__file__).parent / "fixtures" / "hostapp"


def hangs_after(wall_s: float, hang_at: int, runs: int = 40) -> ScriptedRunner:
    """Every run prints the same checksum and time, taking `wall_s`; run number `hang_at` (from
    1; 0: none) times out instead."""
    ok = Completed((), 0, "checksum: 1.5\ntime_ms: 10.0\n", "", False, wall_s, True)
    hung = Completed((), -15, "", "", True, 600.0, True, "timed out")
    return ScriptedRunner([hung if n == hang_at else ok for n in range(1, runs + 1)])


def _limits(runner: ScriptedRunner) -> list[tuple[str, float]]:
    """(the build folder, the time limit) of each run."""
    return [(Path(c.argv[0]).parent.name, c.timeout_s) for c in runner.calls]


@pytest.fixture
def config_root(tmp_path: Path) -> Path:
    shutil.copytree(FIXTURE, tmp_path / "app")
    text = (
        (tmp_path / "app" / "nvcc-opt.toml")
        .read_text()
        .replace("timeout_s = 60", "timeout_s = 600")
    )
    (tmp_path / "app" / "nvcc-opt.toml").write_text(text)
    (tmp_path / "app" / "build").mkdir()
    return tmp_path / "app"


def _measure(root: Path, runner: ScriptedRunner) -> None:
    config = load(root)
    base, cand = Build(root / "base"), Build(root / "cand")
    for b in (base, cand):
        b.build_dir.mkdir()
    measure(config, runner, base, cand, repeats=6, gpu="0")


def test_a_hung_baseline_run_is_stopped_at_ten_times_the_check_runs(config_root: Path) -> None:
    runner = hangs_after(wall_s=7.5, hang_at=3)  # the check runs, then the first timed run
    with pytest.raises(RunHung, match=r"the baseline's build did not end within 75 s"):
        _measure(config_root, runner)
    assert [limit for _, limit in _limits(runner)] == [600.0, 600.0, 75.0]
    assert _limits(runner)[2][0] == "base"


def test_a_hung_candidate_run_is_named_as_the_candidates(config_root: Path) -> None:
    runner = hangs_after(wall_s=0.5, hang_at=6)
    with pytest.raises(RunHung, match=r"the candidate's build did not end within 60 s"):
        _measure(config_root, runner)
    assert _limits(runner)[5] == ("cand", 60.0)


def test_runs_that_end_are_timed_as_before(config_root: Path) -> None:
    runner = hangs_after(wall_s=0.5, hang_at=0)
    _measure(config_root, runner)
    limits = _limits(runner)
    assert len(limits) > 6 and all(limit == 60.0 for _, limit in limits[2:])


def test_the_limit_never_exceeds_the_projects_own() -> None:
    assert hang_limit(300.0, [100.0]) == 300.0
    assert hang_limit(600.0, [0.0, 2.0]) == 60.0
    assert hang_limit(600.0, []) == 600.0
