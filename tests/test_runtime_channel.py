"""The channel library: it builds here against the toolkit's CUPTI, exports what the driver
calls, takes its driver functions from the process (so the driver can load it), and its reports
read back. Running it needs a GPU (tests/test_verify_state_gpu.py)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from nvcc_opt.runtime import build, report
from nvcc_opt.verify import repeat_times, state
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import gpu_available, needs_nvcc

RECORD = """nvcc-opt-channel 1
kernel 401 26888886 smooth_kernel _Z13smooth_kernelPKfS0_Pfi
kernel 401 36346176 block_sums_kernel _Z17block_sums_kernelPKfPdi
memcpy 5 21844512
memset 0 0
state_calls 401
state_allocation a0 00007f2fca000000 67108864 float 3 smooth(float const*, float*) parameter 1
state_allocation a1 00007f2fc2000000 67108864 float 5 smooth(float const*, float*) parameter 2
state_call_ns 1 67872
state_call_ns 2 67424
state_late_ns 26891
state_digest call 1 a0 ac115aaf5e77312d ac115aaf5e77312d
state_digest call 1 a1 dc0b0234a39d0383 d9f4bdb0714c585f
state_compare call 2 a1 differing 16777216 of 16777216 first 0 0.5 0.61 worst 0.2 unwritten 1
state_touched call 2 a0
state_extra 00007f2fd0000000 4096
note something the channel could not do
end
"""


def test_a_report_reads_back() -> None:
    process = report.parse("channel-12.txt", RECORD)
    assert process.complete
    assert [(k.base, k.launches, k.ns) for k in process.kernels] == [
        ("smooth_kernel", 401, 26888886),
        ("block_sums_kernel", 401, 36346176),
    ]
    assert process.memcpy_ns == 21844512 and process.notes == (
        "something the channel could not do",
    )
    state = process.state
    assert state is not None and state.calls == 401
    assert [(a.type, a.ordinal) for a in state.allocations] == [("float", 3), ("float", 5)]
    assert state.allocations[1].seen == "smooth(float const*, float*) parameter 2"
    assert state.call_ns == (67872, 67424) and state.late_ns == 26891
    assert state.digests[(1, 1)] == ("dc0b0234a39d0383", "d9f4bdb0714c585f")
    (c,) = state.compares
    assert (c.call, c.index, c.differing, c.elements, c.unwritten) == (
        2,
        1,
        16777216,
        16777216,
        True,
    )
    assert (c.expected, c.got) == (0.5, 0.61)
    assert state.touched == ((2, 0),)
    assert state.problems == ("state_extra 00007f2fd0000000 4096",)


def test_the_state_check_knows_how_many_calls_the_channel_times_one_by_one() -> None:
    source = (Path(build.__file__).with_name("channel.cpp")).read_text()
    assert f"constexpr int kMaxEpisodesTimed = {repeat_times.PER_CALL_TIMES};" in source
    assert state.SMALL_TABLE == 64 << 10
    assert "constexpr size_t kSmallTable = 64u << 10;" in source  # what the state check mirrors


def test_a_report_without_its_end_line_is_incomplete(tmp_path: Path) -> None:
    (tmp_path / "channel-1.txt").write_text(RECORD.replace("end\n", ""), encoding="utf-8")
    (tmp_path / "channel-2.txt.tmp").write_text(RECORD, encoding="utf-8")
    (tmp_path / "channel-3.txt").write_text(RECORD, encoding="utf-8")
    seen = report.read(tmp_path)
    assert [p.complete for p in seen.processes] == [False, True, False]
    assert not seen.complete
    assert seen.launches()["smooth_kernel"] == 3 * 401
    assert seen.gpu_ns(["smooth_kernel"]) == 3 * 26888886
    assert report.read(tmp_path / "missing") == report.Report()


@needs_nvcc
@pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++")
def test_the_library_builds_once_and_loads_without_the_driver_linked(tmp_path: Path) -> None:
    try:
        built = build.library(ProcessRunner(), root=tmp_path)
    except build.ChannelUnavailable as exc:
        pytest.skip(str(exc))
    assert built == build.library(ProcessRunner(), root=tmp_path)  # cached
    symbols = subprocess.run(["nm", "-D", str(built)], capture_output=True, text=True).stdout
    assert " T InitializeInjection" in symbols
    undefined = {line.split()[-1] for line in symbols.splitlines() if " U " in line}
    # The driver loads it with RTLD_NOW into a process whose libcuda is not global: every driver
    # function must come through dlsym, none may be left for the loader.
    assert not {s for s in undefined if s.startswith("cu") and not s.startswith("cupti")}
    env = build.environment(built, tmp_path / "out")
    assert env["CUDA_INJECTION64_PATH"] == str(built)
    assert env["NVCC_OPT_CHANNEL_OUT"] == str(tmp_path / "out")


def test_no_toolkit_is_said(tmp_path: Path) -> None:
    fake = tmp_path / "bin" / "nvcc"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n")
    with pytest.raises(build.ChannelUnavailable, match="not found in the CUDA toolkit"):
        build.find_cupti(build.toolkit(str(fake)))


RESETS = """\
#include <cstdio>
#include <cuda_runtime.h>
__global__ void scale(float* x, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) x[i] *= 2.0f;
}
int main() {
  const int n = 1 << 16;
  float* x;
  cudaMalloc(&x, n * sizeof(float));
  for (int k = 0; k < 5; ++k) scale<<<n / 256, 256>>>(x, n);
  cudaDeviceSynchronize();
  cudaFree(x);
  cudaDeviceReset();  // as LULESH and many samples end: the context is destroyed before exit
  printf("PASS\\n");
  return 0;
}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_a_program_that_resets_its_device_ends_and_is_counted(tmp_path: Path) -> None:
    """The context's destruction flushes the GPU's records: it once did so holding the lock the
    flush's own callback takes, and every run of such a program hung until its timeout."""
    built, binary = _channel_and_program(tmp_path, "resets", RESETS)
    out = tmp_path / "out"
    out.mkdir()
    done = _run(binary, build.environment(built, out))
    assert done.returncode == 0 and "PASS" in done.stdout, done.stderr
    seen = report.read(out)
    assert seen.complete and seen.launches()["scale"] == 5


PINNED = r"""
#include <cstdio>
#include <cuda_runtime.h>
__global__ void step(float* x, int* flag, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = x[i] * 0.5f + 1.0f;
    if (i < n && x[i] < 0.0f) *flag = 1;  // LULESH's bad_vol: a flag in page-locked host memory
}
int main()
{
    const int n = 1 << 16;
    float* x = nullptr;
    int* flag = nullptr;
    int* other = nullptr;
    cudaMalloc(&x, n * sizeof(float));
    cudaMemset(x, 0, n * sizeof(float));
    cudaMallocHost(&flag, sizeof(int), 0);    // cudaHostAlloc: cuMemHostAlloc
    cudaMallocHost((void**)&other, 4096);       // cuMemAllocHost
    *flag = 0;
    for (int call = 0; call < 3; ++call) {
        step<<<n / 256, 256>>>(x, flag, n);
        cudaDeviceSynchronize();
    }
    printf("flag %d other %d\n", *flag, other != nullptr);
    return 0;
}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_page_locked_host_memory_a_kernel_reaches_is_found_again_in_the_next_run(
    tmp_path: Path,
) -> None:
    """A region kernel that writes a flag in cudaMallocHost memory (LULESH's bad_vol): the state
    check's compare run finds that allocation by its ordinal, as device memory, although its
    address differs from run to run. Before, it had none, and every compare run of LULESH
    ended with `state_layout a22`."""
    built, binary = _channel_and_program(tmp_path, "pinned", PINNED)
    data = tmp_path / "record"
    data.mkdir()
    settings = ["each_launch_a_call 1", "calls 3", f"copy_cap {1 << 20}", "rtol 1e-4"]
    settings.append(f"data {data}")

    def run(role: str, recorded: report.State | None = None) -> report.State:
        out = tmp_path / f"out-{role}"
        out.mkdir()
        config = tmp_path / f"{role}.cfg"
        config.write_text(state._config(role, frozenset({"step"}), settings, recorded))
        done = _run(binary, build.environment(built, out, config))
        assert done.returncode == 0 and "flag 0" in done.stdout, done.stderr
        [seen] = report.read(out).states
        return seen

    recorded = run("record")
    assert len(recorded.allocations) == 2 and all(a.ordinal >= 0 for a in recorded.allocations)
    again = run("compare", recorded)
    assert not any(p.startswith("state_layout") for p in again.problems), again.problems


LOW_PRECISION = r"""
#include <cstdio>
#include <cstring>
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
template <typename T>
__global__ void axpy(const T* x, T* y, int memo, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n || (memo && static_cast<float>(y[i]) != 0.0f)) return;  // computed before: kept
    y[i] = static_cast<T>(2.0f * static_cast<float>(x[i]) + 1.0f);
}
template <typename T>
void run(int memo)
{
    const int n = 1 << 16;
    T* x = nullptr;
    T* y = nullptr;
    cudaMalloc(&x, n * sizeof(T));
    cudaMalloc(&y, n * sizeof(T));
    T* host = new T[n];
    for (int i = 0; i < n; ++i) host[i] = static_cast<T>(0.25f + (i % 97) / 64.0f);
    cudaMemcpy(x, host, n * sizeof(T), cudaMemcpyHostToDevice);
    cudaMemset(y, 0, n * sizeof(T));
    for (int call = 0; call < 5; ++call) {
        axpy<T><<<n / 256, 256>>>(x, y, memo, n);
        cudaDeviceSynchronize();
    }
    cudaMemcpy(host, y, sizeof(T), cudaMemcpyDeviceToHost);
    printf("y0 %g\n", static_cast<float>(host[0]));
    delete[] host;
}
int main(int argc, char** argv)
{
    int memo = argc > 2 && std::strcmp(argv[2], "memo") == 0;
    if (std::strcmp(argv[1], "half") == 0) run<__half>(memo);
    else run<__nv_bfloat16>(memo);
    return 0;
}
"""


@needs_nvcc
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
@pytest.mark.parametrize("kind", ["half", "bfloat16"])
def test_half_and_bfloat16_data_is_changed_between_calls_so_a_memo_shows(
    tmp_path: Path, kind: str
) -> None:
    """A kernel of __half (or __nv_bfloat16) data whose memo variant keeps every output element
    it computed before: the state check changes both allocations before calls 2 and 3, so the
    memo's outputs are stale there, while the honest program's agree with the record's. Before,
    half and bfloat16 data was never changed, and the memo passed every comparison."""
    built, binary = _channel_and_program(tmp_path, "lowp", LOW_PRECISION)
    data = tmp_path / "record"
    data.mkdir()
    settings = ["each_launch_a_call 1", "calls 3", f"copy_cap {1 << 20}", "rtol 1e-4"]
    settings += [f"data {data}", "salt 7"]

    def run(role: str, variant: str, recorded: report.State | None = None) -> report.State:
        out = tmp_path / f"out-{role}-{variant}"
        out.mkdir()
        config = tmp_path / f"{role}-{variant}.cfg"
        config.write_text(state._config(role, frozenset({"axpy"}), settings, recorded))
        arg = "half" if kind == "half" else "bf16"
        done = subprocess.run(
            [str(binary), arg, variant],
            env={**os.environ, **build.environment(built, out, config)},
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0 and "y0" in done.stdout, done.stderr
        [seen] = report.read(out).states
        return seen

    recorded = run("record", "honest")
    assert [a.type for a in recorded.allocations] == [kind, kind], recorded.allocations
    honest = run("compare", "honest", recorded)
    assert not honest.problems and all(c.differing == 0 for c in honest.compares), honest
    memo = run("compare", "memo", recorded)
    stale = [c for c in memo.compares if c.differing > 0]
    assert stale and {c.call for c in stale} <= {2, 3}, memo.compares


def _channel_and_program(tmp_path: Path, name: str, source: str) -> tuple[Path, Path]:
    """The channel library built here (the test skips where it cannot be) and `source` compiled
    for sm_90 as `tmp_path/name`."""
    try:
        built = build.library(ProcessRunner(), root=tmp_path / "channel")
    except build.ChannelUnavailable as exc:
        pytest.skip(str(exc))
    (tmp_path / f"{name}.cu").write_text(source)
    binary = tmp_path / name
    subprocess.run(
        ["nvcc", "-arch=sm_90", "-o", str(binary), str(tmp_path / f"{name}.cu")], check=True
    )
    return built, binary


def _run(binary: Path, channel: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary)],
        env={**os.environ, **channel},
        capture_output=True,
        text=True,
        timeout=120,
    )
