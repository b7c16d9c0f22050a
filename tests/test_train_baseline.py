"""`nvcc-opt train baseline` over a set of the fixture apps, with real CMake builds.

There is no GPU on the CI machine: `--gpus 0` makes it run the apps' run scripts anyway, which
stand in for a GPU run (they require the built program and print a time and PASS, or FAIL).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt_train.cli import train
from tests.conftest import gpu_available, nvcc_available

APPS = Path(__file__).resolve().parent / "fixtures" / "train_apps"


def run(*args: str) -> tuple[int, str]:
    result = CliRunner().invoke(train, list(args))
    return result.exit_code, result.output


def rows(problem_set: Path) -> list[dict[str, object]]:
    path = problem_set / "baselines.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


@pytest.mark.slow
@pytest.mark.skipif(not nvcc_available(), reason="needs nvcc and cmake")
def test_baseline_is_resumable_and_stops_starting_within(tmp_path: Path) -> None:
    out = tmp_path / "set"
    args = ["--from", "suite", str(APPS), "--only", "saxpy,blur", "--check", "none"]
    code, output = run("problems", str(out), *args)
    assert code == 0, output

    code, output = run("baseline", str(out), "--gpus", "0", "--within", "0")
    assert code == 0, output
    assert rows(out) == []
    assert "remaining: 2 not started (--within 0 s)" in output

    code, output = run("baseline", str(out), "--gpus", "0", "--runs", "3")
    assert code == 0, output
    measured = {str(r["id"]): r for r in rows(out)}
    assert set(measured) == {"suite-saxpy", "suite-blur"}
    saxpy, blur = measured["suite-saxpy"], measured["suite-blur"]
    assert saxpy["ok"] is True and saxpy["ms"] == 1.25 and saxpy["runs_ms"] == [1.25] * 3
    assert saxpy["spread"] == 0.0 and saxpy["gpu"] == "0" and saxpy["reason"] == ""
    assert {"machine", "at"} <= set(saxpy)
    assert blur["ok"] is False and blur["ms"] is None
    assert blur["reason"] == "run: fails its own check: missing: check: PASS"
    assert "measured now: 2 (before: 0); rows: 2, 1 failed" in output
    assert "baseline ms: min 1.25, median 1.25, max 1.25" in output

    before = (out / "baselines.jsonl").read_bytes()
    code, output = run("baseline", str(out), "--gpus", "0")
    assert code == 0, output
    assert "measured now: 0 (before: 2)" in output
    assert (out / "baselines.jsonl").read_bytes() == before


def test_baseline_refuses_what_it_cannot_measure(tmp_path: Path) -> None:
    code, output = run("baseline", str(tmp_path / "none"))
    assert code == 1 and "no such problem set folder" in output
    half = tmp_path / "half"
    half.mkdir()
    (half / "problemset.json").write_text(
        json.dumps({"format": "nvcc-opt/problemset", "version": 1, "complete": False})
    )
    code, output = run("baseline", str(half), "--gpus", "0")
    assert code == 1 and "half-written problem set" in output
    if not gpu_available():
        (half / "problemset.json").write_text(
            json.dumps({"format": "nvcc-opt/problemset", "version": 1, "complete": True})
        )
        code, output = run("baseline", str(half))
        assert code == 1 and "no GPU here" in output and len(output.splitlines()) == 1
