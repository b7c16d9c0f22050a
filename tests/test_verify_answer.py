"""`nvcc-opt verify --answer TRACE`: the final verification of a trace's final answer, for a run
whose own final verification did not finish. Real builds of the host-code CMake project (it runs
without a GPU); the trace is written by the agent's own TraceWriter, as `optimize` writes it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from nvcc_opt.submit import TraceAnswerError, answer_of_trace, region_meta
from nvcc_opt.tools.region import Region
from tests.conftest import needs_nvcc
from tests.test_tools_bench import FIXTURE, HALF, WRONG


def _trace(
    path: Path,
    region: Region | None,
    code: str | None,
    *,
    args: list[str] | None = None,
    outcome: bool = True,
) -> Path:
    """A trace as `optimize` leaves it once its agent stopped (before the final verification)."""
    writer = TraceWriter(path, {"region": region_meta(region)} if region is not None else {})
    writer.add_meta(model="scripted", tools=["benchmark_code"])
    writer.add_message({"role": "system", "content": "optimize"})
    if outcome:
        answer = None
        if code is not None:
            answer = {"final_code": code, "explanation": "half", "compile_args": args or []}
        writer.set_outcome(
            {"reason": "final_answer" if answer else "limit:turns", "answer": answer}
        )
    writer.save()
    return path


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    root = tmp_path / "hostapp"
    shutil.copytree(FIXTURE, root, ignore=shutil.ignore_patterns("build"))
    return root


def _region(root: Path) -> Region:
    return Region.find(root / "src" / "work.cu", "accumulate")


def test_the_answer_comes_back_with_its_region_as_it_is_now(copy: Path, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.json", _region(copy), HALF, args=["-O3"])
    region, answer = answer_of_trace(trace)
    assert region == _region(copy)
    assert (answer.code, answer.compile_args, answer.model) == (HALF, ("-O3",), "scripted")
    assert answer.origin == "verify --answer"
    assert answer.trace["meta"]["region"]["name"] == "accumulate"  # type: ignore[index]


@pytest.mark.parametrize(
    ("make", "said"),
    [
        (lambda p, r: p.write_text("{}") or p, "not an nvcc-opt/trace file"),
        (lambda p, r: _trace(p, None, HALF), "the trace names no region"),
        (lambda p, r: _trace(p, r, None), "without a valid final answer (limit:turns)"),
        (lambda p, r: _trace(p, r, HALF, outcome=False), "stopped before its model answered"),
        (lambda p, r: _trace(p, r, r.text + "\n// same\n"), "the region unchanged"),
    ],
)
def test_a_trace_with_nothing_to_verify_is_one_line_naming_it(
    copy: Path, tmp_path: Path, make: object, said: str
) -> None:
    path = tmp_path / "t.json"
    make(path, _region(copy))  # type: ignore[operator]
    with pytest.raises(TraceAnswerError) as error:
        answer_of_trace(path)
    assert said in str(error.value) and str(path) in str(error.value)
    assert "\n" not in str(error.value)


def test_an_answer_to_code_that_has_changed_since_is_refused(copy: Path, tmp_path: Path) -> None:
    trace = _trace(tmp_path / "t.json", _region(copy), HALF)
    source = copy / "src" / "work.cu"
    source.write_text(source.read_text().replace("double total = 0.0;", "double total = 0.0;  "))
    with pytest.raises(TraceAnswerError, match=r"work\.cu:\d+: region accumulate changed since"):
        answer_of_trace(trace)
    (copy / "src" / "work.cu").unlink()
    with pytest.raises(TraceAnswerError, match="cannot read"):
        answer_of_trace(trace)


def _cli(exe: str, *args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([exe, *args], cwd=cwd, capture_output=True, text=True)


@needs_nvcc
@pytest.mark.slow
def test_a_passing_answer_is_stored_as_proposed_and_a_wrong_one_is_not(
    copy: Path, tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    db = tmp_path / "state" / "store.db"
    monkeypatch.setenv("NVCC_OPT_STORE", str(db))
    build = copy / "build"
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    subprocess.run(["cmake", "-S", copy, "-B", build, "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True)
    good = _trace(tmp_path / "good.json", _region(copy), HALF)
    bad = _trace(tmp_path / "bad.json", _region(copy), WRONG)

    done = _cli(exe, "verify", "--answer", str(good), "--answer", str(bad), cwd=copy)
    assert done.returncode == 1, done.stdout + done.stderr  # the wrong one is not stored
    assert "accumulate: improved: proposed rewrite #1 (nvcc-opt review)" in done.stdout
    assert "accumulate: rejected: nothing stored" in done.stdout
    assert "numbers_differ" in done.stdout
    with Store.open(db) as store:
        stored = store.rewrites()
    assert [(r.id, r.state, r.code) for r in stored] == [(1, RewriteState.PROPOSED, HALF)]
    assert stored[0].origin == "verify --answer" and stored[0].last_verification is not None
    assert json.loads(good.read_text())["meta"]["region"]["file"] == str(_region(copy).file)

    both = _cli(exe, "verify", "1", "--answer", str(good), cwd=copy)
    assert both.returncode == 2 and "not both" in both.stderr
    missing = _cli(exe, "verify", "--answer", str(tmp_path / "none.json"), cwd=copy)
    assert missing.returncode == 1 and "cannot verify:" in missing.stderr
    assert "none.json" in missing.stderr
