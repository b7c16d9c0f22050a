"""`nvcc-opt optimize` end to end on the host-code CMake project, with a deterministic model served
by an OpenAI-compatible server on loopback: tool calls over a real socket, the real tools, the
independent verification, and the store."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.agent.trace import TRACE_FORMAT
from nvcc_opt.records import RewriteState
from nvcc_opt.store.api import Store
from tests.conftest import needs_nvcc
from tests.openai_server import Step, call, completion, scripted_server
from tests.test_cli_verify import accept_despite_caveats
from tests.test_tools_bench import FIXTURE, HALF, WRONG

pytestmark = [needs_nvcc, pytest.mark.slow]


def _answer(code: str) -> str:
    body = {"final_code": code, "explanation": "half the passes compute the same sum"}
    return "Done.\n```json\n" + json.dumps(body) + "\n```"


@pytest.fixture
def project(tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / "hostapp"
    shutil.copytree(FIXTURE, root)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setenv("NVCC_OPT_STORE", str(tmp_path / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    subprocess.run(["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", root / "build"], check=True, capture_output=True)
    return root


def _optimize(
    exe: str, project: Path, script: list[Step], *extra: str
) -> tuple[str, list[dict[str, Any]], list[object]]:
    """(the progress lines, on stderr; the JSON summary, alone on stdout; the model's requests)"""
    with scripted_server(script, lifetime_s=300) as server:
        done = subprocess.run(
            [exe, "optimize", "--model", f"openai:scripted@{server.base_url}", "--json", *extra],
            cwd=project,
            capture_output=True,
            text=True,
            timeout=600,
        )
        requests = list(server.requests)
    assert done.returncode == 0, done.stderr
    summary: list[dict[str, Any]] = json.loads(done.stdout)  # nothing else on stdout
    return done.stderr, summary, requests


def test_a_verified_speedup_is_proposed_with_its_trace(project: Path, exe: str) -> None:
    tool_call = call("c1", "benchmark_code", json.dumps({"code": HALF}))
    script = [Step(completion(None, [tool_call])), Step(completion(_answer(HALF)))]
    out, _, requests = _optimize(exe, project, script, "--gpus", "0,1")
    assert "proposed rewrite #1" in out, out
    progress = "[accumulate gpu 0] tool call 1: benchmark_code (best so far 1.000x, "
    assert re.search(re.escape(progress) + r"\d+:\d\d left\)", out), out
    # where the time went: the baseline and each benchmark_code call, with what it measured
    baseline = r"\] baseline [0-9.e+]+ ms \(median of 3 runs; built and timed in \d+:\d\d\)"
    assert re.search(baseline, out), out
    done = re.search(r"\] tool call 1: improved, (\d+\.\d{3})x \(took \d+:\d\d\)", out)
    assert done and float(done[1]) > 1.0, out
    second = requests[1].body  # type: ignore[attr-defined]
    observation = second["messages"][-1]
    assert observation["role"] == "tool" and "verdict: improved" in observation["content"]
    with Store.open(project.parent / "state" / "store.db") as store:
        (rewrite,) = store.rewrites()
    assert rewrite.state is RewriteState.PROPOSED and rewrite.origin == "optimize"
    assert rewrite.code == HALF and rewrite.model.startswith("openai:scripted@")
    assert rewrite.last_verification is not None and rewrite.last_verification.passed
    assert isinstance(rewrite.trace, dict) and rewrite.trace["format"] == TRACE_FORMAT
    accept_despite_caveats(exe, "1", cwd=project)


def test_a_wrong_answer_keeps_the_original(project: Path, exe: str) -> None:
    out, summary, _ = _optimize(exe, project, [Step(completion(_answer(WRONG)))])
    assert "no verified improvement, original kept" in out
    assert summary[0]["status"] == "original kept" and summary[0]["speedup"] == 1.0
    assert summary[0]["baseline_ms"] > 0 and summary[0]["wall_s"] > 0
    assert any("numbers_differ" in r for r in summary[0]["reasons"])
    with Store.open(project.parent / "state" / "store.db") as store:
        assert store.rewrites() == []


def test_the_no_tools_baseline_offers_no_tool_and_takes_one_answer(project: Path, exe: str) -> None:
    """The paper's no-tools baseline: the region in the prompt, no tool schema sent, one model
    turn; the answer is verified like any other (a faster correct one is proposed)."""
    out, summary, requests = _optimize(
        exe, project, [Step(completion(_answer(HALF)))], "--no-tools"
    )
    assert "proposed rewrite #1" in out, out
    (request,) = requests  # one turn
    body = request.body  # type: ignore[attr-defined]
    assert not body.get("tools")
    assert "none in this session." in body["messages"][-1]["content"]
    assert summary[0]["change"] == "code"
    with scripted_server([], lifetime_s=30) as server:
        both = subprocess.run(
            [exe, "optimize", "--model", f"openai:x@{server.base_url}", "--no-tools", "--parity"],
            cwd=project,
            capture_output=True,
            text=True,
        )
    assert both.returncode == 2 and "--no-tools offers no tool" in both.stderr
