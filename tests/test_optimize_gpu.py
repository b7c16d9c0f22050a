"""On a GPU: a scripted trace makes an honest improvement to the example application (the `pair`
region's two kernels fused into one pass, so `tmp` is neither written nor read back), `optimize`
verifies and proposes it, `review --accept` and a rebuild put it in the user's build, and a re-run
of the application shows the speedup. Marked `gpu`: skipped without one."""

from __future__ import annotations

import json
import os
import shutil
import statistics
import subprocess
from pathlib import Path

import pytest

from tests.conftest import gpu_available, needs_nvcc
from tests.openai_server import Step, call, completion, scripted_server

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"

FUSED = """\
// axpy and rescale in one pass: tmp = alpha * s + y stays in a register.
__global__ void update_kernel(float alpha, float scale, float shift, const float* __restrict__ s,
                              const float* __restrict__ y, float* __restrict__ out, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) {
        float tmp = alpha * s[i] + y[i];
        out[i] = scale * tmp + shift;
    }
}

void launch_update(const float* s, const float* y, float* tmp, float* out, int n)
{
    (void)tmp;  // no longer needed between the two steps
    update_kernel<<<num_blocks(n), kBlockSize>>>(kAlpha, kScale, kShift, s, y, out, n);
    CUDA_CHECK(cudaGetLastError());
}
"""

pytestmark = [
    needs_nvcc,
    pytest.mark.slow,
    pytest.mark.gpu,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU"),
]


def _times(program: Path, runs: int = 7) -> list[float]:
    found = []
    for _ in range(runs):
        done = subprocess.run([program], capture_output=True, text=True, check=True)
        assert "check: PASS" in done.stdout, done.stdout
        line = next(x for x in done.stdout.splitlines() if x.startswith("time_ms: "))
        found.append(float(line.split()[1]))
    return found


def test_an_honest_improvement_lands_in_the_build_and_runs_faster(tmp_path: Path, exe: str) -> None:
    root = tmp_path / "saxpy-stencil"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".nvcc-opt"))
    env = {**os.environ, "NVCC_OPT_STORE": str(tmp_path / "state" / "store.db")}
    build = root / "build"
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    configure = ["cmake", "-S", root, "-B", build, "-G", "Ninja", launcher]
    subprocess.run(configure, check=True, capture_output=True, env=env)
    subprocess.run(["cmake", "--build", build], check=True, capture_output=True, env=env)
    before = _times(build / "saxpy_stencil")

    why = "one pass instead of two: tmp stays in a register"
    answer = {"final_code": FUSED, "explanation": why}
    script = [
        Step(completion(None, [call("c1", "benchmark_code", json.dumps({"code": FUSED}))])),
        Step(completion("```json\n" + json.dumps(answer) + "\n```")),
    ]
    with scripted_server(script, lifetime_s=900) as server:
        done = subprocess.run(
            [exe, "optimize", "src/update.cu:pair", "--model",
             f"openai:scripted@{server.base_url}", "--json"],
            cwd=root, capture_output=True, text=True, timeout=900, env=env,
        )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "proposed rewrite #1" in done.stderr, done.stderr
    summary = json.loads(done.stdout)  # with --json, stdout holds it alone
    assert summary[0]["status"] == "proposed" and summary[0]["speedup"] > 1.05

    accepted = subprocess.run(
        [exe, "review", "--accept", "1"], capture_output=True, text=True, env=env
    )
    assert accepted.returncode == 0, accepted.stderr
    rebuilt = subprocess.run(
        ["cmake", "--build", build, "--verbose"], capture_output=True, text=True, env=env
    )
    assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
    # exactly the accepted file recompiled (the archive's link line names every object)
    compiled = [line for line in rebuilt.stdout.splitlines() if " -c " in line]
    assert len(compiled) == 1 and "src/update.cu" in compiled[0], rebuilt.stdout
    after = _times(build / "saxpy_stencil")
    assert statistics.median(before) / statistics.median(after) > 1.05, (before, after)
