"""A timed run that hangs is stopped after ten times the check runs' time (at least a minute, at
most [run] timeout_s), and the error says whose build hung; a process runner scripted at the edge
stands in for the GPU application."""

from __future__ import annotations

import shutil
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.verify.measure import Build, MeasureError, hang_limit, measure
from nvcc_opt.workspace.runner import Completed

FIXTURE = Path(__file__).parent / "fixtures" / "hostapp"


class HangsAfter:
    """Every run prints the same checksum and time, taking `wall_s`; run number `hang_at` (from
    1) times out instead. Records each run's build folder and time limit."""

    def __init__(self, wall_s: float, hang_at: int) -> None:
        self.wall_s, self.hang_at = wall_s, hang_at
        self.calls: list[tuple[str, float]] = []

    def run(
        self,
        argv: Sequence[str],
        *,
        cwd: Path,
        env: Mapping[str, str] | None = None,
        timeout_s: float,
        writable: Sequence[Path] = (),
        readonly: Sequence[Path] = (),
        network: bool = False,
        sandbox: bool = True,
        output_cap: int = 1_000_000,
    ) -> Completed:
        self.calls.append((Path(argv[0]).parent.name, timeout_s))
        if len(self.calls) == self.hang_at:
            return Completed(tuple(argv), -15, "", "", True, timeout_s, True, "timed out")
        out = "checksum: 1.5\ntime_ms: 10.0\n"
        return Completed(tuple(argv), 0, out, "", False, self.wall_s, True)


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


def _measure(root: Path, runner: HangsAfter) -> None:
    config = load(root)
    base, cand = Build(root / "base"), Build(root / "cand")
    for b in (base, cand):
        b.build_dir.mkdir()
    measure(config, runner, base, cand, repeats=6, gpu="0")


def test_a_hung_baseline_run_is_stopped_at_ten_times_the_check_runs(config_root: Path) -> None:
    runner = HangsAfter(wall_s=7.5, hang_at=3)  # the check runs, then the first timed run
    with pytest.raises(MeasureError, match=r"the baseline's build did not end within 75 s"):
        _measure(config_root, runner)
    assert [limit for _, limit in runner.calls] == [600.0, 600.0, 75.0]
    assert runner.calls[2][0] == "base"


def test_a_hung_candidate_run_is_named_as_the_candidates(config_root: Path) -> None:
    runner = HangsAfter(wall_s=0.5, hang_at=6)
    with pytest.raises(MeasureError, match=r"the candidate's build did not end within 60 s"):
        _measure(config_root, runner)
    assert runner.calls[5] == ("cand", 60.0)


def test_runs_that_end_are_timed_as_before(config_root: Path) -> None:
    runner = HangsAfter(wall_s=0.5, hang_at=0)
    _measure(config_root, runner)
    assert len(runner.calls) > 6 and all(limit == 60.0 for _, limit in runner.calls[2:])


def test_the_limit_never_exceeds_the_projects_own() -> None:
    assert hang_limit(300.0, [100.0]) == 300.0
    assert hang_limit(600.0, [0.0, 2.0]) == 60.0
    assert hang_limit(600.0, []) == 600.0
