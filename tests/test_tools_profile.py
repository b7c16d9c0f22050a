"""profile_kernel: the optional seventh tool. On the CPU, the scripted runner stands at the process
edge (private tree configure and build, then the run under ncu) and answers with canned ncu CSV;
on a GPU (marked `gpu`), the example application's region is profiled for real."""

from __future__ import annotations

import json
import os
import random
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from click.testing import CliRunner

from nvcc_opt.config import load
from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools import ncu
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.catalog import (
    ALL_TOOL_NAMES,
    OPTIONAL_TOOLS,
    REGION_TOOLS,
    TOOL_NAMES,
    declarations,
    open_catalog,
)
from nvcc_opt.tools.cli import tool_command
from nvcc_opt.tools.profile import NO_KERNELS, SLOWDOWN, Profile
from nvcc_opt.tools.prompt import choose_tools
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import Completed, ProcessRunner, ScriptedRunner, completed
from tests.conftest import PAPER_SIX, gpu_available, needs_nvcc

SOURCE = """\
#include <cuda_runtime.h>

// @optimize begin pair
__global__ void axpy_kernel(float a, const float* x, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] = a * x[i] + y[i];
}

__global__ void rescale_kernel(float s, float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] *= s;
}
// @optimize end

// @optimize begin host
int twice(int n) { return 2 * n; }
// @optimize end
"""
RUN_TIMEOUT_S = 60

# `ncu ... --csv --page raw --print-units base --print-kernel-base function` as it interleaves
# with the application's output: ==PROF== lines, the program's lines, then one header, one units
# row and a row per profiled launch (here alternating, three launches of each kernel).
_COLUMNS = [
    "ID",
    "Process ID",
    "Process Name",
    "Host Name",
    "Kernel Name",
    "Context",
    "Stream",
    "Block Size",
    "Grid Size",
    "Device",
    "CC",
    *ncu.METRICS,
]
_UNITS = {
    ncu.TIME: "nsecond",
    ncu.DRAM_PCT: "%",
    ncu.DRAM_BYTES_PER_S: "byte/second",
    ncu.SM_PCT: "%",
    ncu.ACHIEVED_OCCUPANCY: "%",
    ncu.THEORETICAL_OCCUPANCY: "%",
    ncu.REGISTERS: "register/thread",
    ncu.BLOCK_SIZE: "",
    ncu.GRID_SIZE: "",
    **{metric: "block" for metric in ncu.LIMITS.values()},
}


def _stall(reason: str) -> str:
    return f"{ncu.STALL_PREFIX}{reason}{ncu.STALL_SUFFIX}"


def _launch(i: int, kernel: str, k: int) -> list[str]:
    """Launch `i`, the `k`-th (0-2) of `kernel`: values whose means are round numbers."""
    d = k - 1  # -1, 0, 1: the mean of each varying metric is its middle value
    axpy = kernel == "axpy_kernel"
    values = {
        ncu.TIME: f"{(102_000 if axpy else 50_000) + 2_000 * d:,}",
        ncu.DRAM_PCT: f"{(82 if axpy else 40) + 2 * d:.2f}",
        ncu.DRAM_BYTES_PER_S: f"{(4.0e12 if axpy else 1.9e12) + 1e11 * d:,.0f}",
        ncu.SM_PCT: f"{(21 if axpy else 70) + d:.2f}",
        ncu.ACHIEVED_OCCUPANCY: f"{(85 if axpy else 45) + 3 * d:.2f}",
        ncu.THEORETICAL_OCCUPANCY: "100" if axpy else "50",
        ncu.REGISTERS: "16" if axpy else "40",
        ncu.BLOCK_SIZE: "256",
        ncu.GRID_SIZE: "65,536",
        ncu.LIMITS["registers"]: "16" if axpy else "4",
        ncu.LIMITS["shared memory"]: "32",
        ncu.LIMITS["warps"]: "8",
        ncu.LIMITS["blocks"]: "32",
    }
    # axpy: 20 cycles per issue, 70% long scoreboard; rescale: 10 cycles, math pipe first
    stalls = (
        {"long_scoreboard": 14 + d, "wait": 2, "selected": 1, "not_selected": 1 - d / 2}
        | {"short_scoreboard": 0.8, "misc": 0.6, "branch_resolving": 0.4, "drain": 0.2 + d / 2}
        if axpy
        else {"math_pipe_throttle": 4, "wait": 3, "selected": 1, "long_scoreboard": 1.5}
        | {"dispatch_stall": 0.5}
    )
    for reason in ncu.STALL_REASONS:
        values[_stall(reason)] = f"{stalls.get(reason, 0):.2f}"
    head = [str(i), "4242", "app", "127.0.0.1", kernel, "1", "7", "(256, 1, 1)", "(65536, 1, 1)"]
    return [*head, "0", "9.0", *(values[m] for m in ncu.METRICS)]


def _csv_line(fields: list[str]) -> str:
    return ",".join(json.dumps(f) for f in fields)


def ncu_output(kernels: tuple[str, ...] = ("axpy_kernel", "rescale_kernel")) -> str:
    units = ["", "", "", "", "", "", "", "", "", "", "", *(_UNITS.get(m, "") for m in ncu.METRICS)]
    rows = []
    for n in range(3 * len(kernels)):
        rows.append(_csv_line(_launch(n, kernels[n % len(kernels)], n // len(kernels))))
    return "\n".join(
        [
            "==PROF== Connected to process 4242 (/tmp/build/app)",
            "size: 16777216",
            *(
                f'==PROF== Profiling "{k}" - {n}: 0%....50%....100% - 9 passes'
                for n, k in enumerate(kernels * 3)
            ),
            "check: PASS",
            "time_ms: 0.5321",
            "==PROF== Disconnected from process 4242",
            _csv_line(_COLUMNS),
            _csv_line(units),
            *rows,
            "",
        ]
    )


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A configured project (its CMake cache only: the scripted runner does the building) and a
    fake ncu on a PATH of its own."""
    root = tmp_path / "project"
    (root / "build").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "k.cu").write_text(SOURCE)
    (root / "nvcc-opt.toml").write_text(
        f'[build]\ndir = "build"\n[run]\ncommand = "{{build}}/app --size 1024"\n'
        f'timeout_s = {RUN_TIMEOUT_S}\n[gpu]\ndevices = ["1"]\n'
    )
    (root / "build" / "CMakeCache.txt").write_text(
        f"CMAKE_HOME_DIRECTORY:INTERNAL={root}\nCMAKE_GENERATOR:INTERNAL=Ninja\n"
        f"CMAKE_COMMAND:INTERNAL=cmake\nCMAKE_CACHEFILE_DIR:INTERNAL={root / 'build'}\n"
    )
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    tools = tmp_path / "bin"
    tools.mkdir()
    fake = tools / "ncu"
    fake.write_text("#!/bin/sh\nexit 99\n")  # never run: the scripted runner answers
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tools))
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    monkeypatch.setattr(ncu, "CUDA_DIRS", ())
    return root


def profiled(root: Path, answer: Completed | None, region: str = "pair") -> tuple[Profile, str]:
    """profile_kernel called as a model calls it, with the two configures and the build
    scripted to succeed and `answer` as the run under ncu."""
    answers = [completed(), completed(), completed()] + ([answer] if answer else [])
    runner = ScriptedRunner(answers)
    bench = Benchmark(load(root), Region.find(root / "src" / "k.cu", region), runner, "nvcc-opt")
    tool = Profile(bench)
    observation = Toolbox.from_objects(tool).call("profile_kernel", {})
    bench.close()
    return tool, observation


def _runner(tool: Profile) -> ScriptedRunner:
    runner = tool.bench.runner
    assert isinstance(runner, ScriptedRunner)
    return runner


def test_two_kernels_are_summarized_from_the_csv(project: Path) -> None:
    tool, text = profiled(project, completed(0, ncu_output()))
    assert not is_error(text), text
    assert "region 'pair' (the region as it is) profiled with Nsight Compute" in text
    assert "the first 6 launches of the region's 2 kernels (3 per kernel" in text
    assert "--clock-control none" in text
    axpy, rescale = text.split("\nkernel axpy_kernel: ")[1].split("\nkernel rescale_kernel: ")
    assert axpy.startswith("3 launches profiled, grid 65536 x block 256, 16 registers/thread\n")
    assert "  time: 102.00 us per launch\n" in axpy
    assert "  DRAM 82.0% of peak (4000.0 GB/s); SM throughput 21.0% of peak\n" in axpy
    assert "  achieved occupancy 85.0% (theoretical 100.0%)\n" in axpy
    assert "registers 16, shared memory 32, warps 8, blocks 32: warps set the limit" in axpy
    assert (
        "  top stall reasons: long_scoreboard 70%, wait 10%, not_selected 5% "
        "(share of the 20.0 cycles between a warp's instructions)"
    ) in axpy
    assert "hint: memory-bound" in axpy
    assert rescale.startswith("3 launches profiled, grid 65536 x block 256, 40 registers/thread")
    assert "time: 50.00 us per launch" in rescale
    assert "DRAM 40.0% of peak (1900.0 GB/s); SM throughput 70.0% of peak" in rescale
    assert "achieved occupancy 45.0% (theoretical 50.0%)" in rescale
    assert "registers 4, shared memory 32, warps 8, blocks 32: registers set the limit" in rescale
    assert "top stall reasons: math_pipe_throttle 40%, wait 30%, long_scoreboard 15%" in rescale
    assert "hint: compute-bound" in rescale


def test_the_run_is_the_run_script_under_ncu_on_the_configured_gpu(project: Path) -> None:
    tool, text = profiled(project, completed(0, ncu_output()))
    assert not is_error(text), text
    calls = _runner(tool).calls
    assert calls[2].argv[:2] == ("cmake", "--build")  # benchmark_code's candidate tree and build
    tree = Path(calls[2].argv[2])
    assert tree.name == "explore-cand"
    run = calls[3]
    words = list(run.argv)
    assert words[0] == str(project.parent / "bin" / "ncu")
    assert words[words.index("--clock-control") + 1] == "none"
    kernel_filter = words[words.index("--kernel-name") + 1]
    assert kernel_filter == "regex:^(.*::)?(axpy_kernel|rescale_kernel)(<.*)?$"
    assert words[words.index("--launch-count") + 1] == "6"
    metrics = words[words.index("--metrics") + 1].split(",")
    for metric in (
        "gpu__time_duration.sum",
        "dram__throughput.avg.pct_of_peak_sustained_elapsed",
        "sm__throughput.avg.pct_of_peak_sustained_elapsed",
        "dram__bytes.sum.per_second",
        "sm__warps_active.avg.pct_of_peak_sustained_active",
        "launch__registers_per_thread",
        "launch__occupancy_limit_registers",
        "smsp__average_warps_issue_stalled_long_scoreboard_per_issue_active.ratio",
    ):
        assert metric in metrics
    assert "--csv" in words and words[words.index("--page") + 1] == "raw"
    assert words[-2:] == ["--size", "1024"] and words[-3] == f"{tree}/app"
    assert run.env is not None and run.env["CUDA_VISIBLE_DEVICES"] == "1"
    assert run.timeout_s == RUN_TIMEOUT_S * SLOWDOWN
    assert run.sandbox and tree not in run.writable  # as a benchmark_code run's
    assert tree.parent in run.readonly and project in run.readonly
    staged = json.loads((tree / ".nvcc-opt-tree" / "candidate.json").read_text())
    assert "rescale_kernel" in staged["code"]


def test_the_channel_library_is_probed_first_and_read_only_to_every_run(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run that could rewrite the channel library (in the user's cache, loaded by every later
    run and process) could steer every measurement after it: its folder is protected as the
    private trees are, and it is looked for before the first run."""
    library = tmp_path / "cache" / "nvcc-opt" / "channel" / "k" / "libchannel.so"
    library.parent.mkdir(parents=True)
    library.write_bytes(b"")
    probes: list[int] = []

    def channel(self: Benchmark) -> Path:
        probes.append(len(_runner_of(self).calls))
        return library

    monkeypatch.setattr(Benchmark, "channel", channel)
    tool, text = profiled(project, completed(0, ncu_output()))
    assert not is_error(text), text
    run = _runner(tool).calls[3]
    assert library.parent in run.readonly and project in run.readonly
    assert probes and probes[0] <= 3  # before the first run (calls 0-2: configures, build)


def _runner_of(bench: Benchmark) -> ScriptedRunner:
    assert isinstance(bench.runner, ScriptedRunner)
    return bench.runner


def test_given_code_is_profiled_with_its_flags(project: Path) -> None:
    region = Region.find(project / "src" / "k.cu", "pair")
    code = region.text.replace("y[i] *= s;", "y[i] = s * y[i];")
    runner = ScriptedRunner([completed(), completed(), completed(), completed(0, ncu_output())])
    with Benchmark(load(project), region, runner, "nvcc-opt") as bench:
        text = Profile(bench).profile_kernel(code, ["-use_fast_math"])
    assert "(the code given with -use_fast_math)" in text
    staged = Path(runner.calls[2].argv[2]) / ".nvcc-opt-tree" / "candidate.json"
    loaded = json.loads(staged.read_text())
    assert loaded["code"] == code and loaded["compile_args"] == ["-use_fast_math"]


def test_without_ncu_the_error_says_so_and_what_to_use_instead(
    project: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    tool, text = profiled(project, None)
    assert is_error(text)
    assert "ncu (Nsight Compute) was not found on PATH" in text
    assert "compiler_analysis" in text and "benchmark_code" in text
    assert _runner(tool).calls == []  # nothing built for nothing


def test_ncu_beside_nvcc_is_found(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cuda = tmp_path / "cuda" / "bin"
    cuda.mkdir(parents=True)
    for name in ("nvcc", "ncu"):
        (cuda / name).write_text("#!/bin/sh\n")
        (cuda / name).chmod(0o755)
    wrappers = tmp_path / "wrappers"
    wrappers.mkdir()
    (wrappers / "nvcc").symlink_to(cuda / "nvcc")
    monkeypatch.setattr(ncu, "CUDA_DIRS", ())
    monkeypatch.delenv("CUDA_HOME", raising=False)
    monkeypatch.delenv("CUDA_PATH", raising=False)
    assert ncu.find(str(wrappers)) == str(cuda / "ncu")
    assert ncu.find(str(tmp_path)) is None


def test_no_counter_permission_is_a_clear_message(project: Path) -> None:
    refused = (
        "==PROF== Connected to process 4242 (/tmp/build/app)\n"
        "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
        "Performance Counters on the target device 0. For instructions on enabling permissions "
        "and to get more information see https://developer.nvidia.com/ERR_NVGPUCTRPERM\n"
        "check: PASS\n==PROF== Disconnected from process 4242\n"
        "==WARNING== No kernels were profiled.\n"
    )
    _, text = profiled(project, completed(1, refused))
    assert is_error(text)
    assert "may not read the GPU's performance counters here (ERR_NVGPUCTRPERM)" in text
    assert "NVreg_RestrictProfilingToAdminUsers=0" in text


def test_a_timeout_says_how_long_and_what_to_do(project: Path) -> None:
    _, text = profiled(project, completed(-15, "==PROF== Connected", timed_out=True))
    assert is_error(text)
    assert f"did not finish within {RUN_TIMEOUT_S * SLOWDOWN:g} s" in text
    assert "Raise [run] timeout_s" in text


def test_a_failing_run_shows_its_last_lines(project: Path) -> None:
    crashed = "==PROF== Connected to process 1\nCUDA error: an illegal memory access"
    _, text = profiled(project, completed(1, crashed))
    assert is_error(text)
    assert "the run under ncu failed (exit status 1)" in text
    assert "an illegal memory access" in text and "benchmark_code" in text


def test_ncu_errors_are_shown(project: Path) -> None:
    bad = "==ERROR== Failed to find metric smsp__average_warps_issue_stalled_misc_per_issue_active"
    _, text = profiled(project, completed(1, bad))
    assert is_error(text) and "ncu failed:\n==ERROR== Failed to find metric" in text


def test_a_run_that_never_launches_the_kernels(project: Path) -> None:
    quiet = "check: PASS\n==WARNING== No kernels were profiled.\n"
    _, text = profiled(project, completed(0, quiet))
    assert is_error(text)
    assert "launched none of the region's kernels (axpy_kernel, rescale_kernel)" in text


def test_a_kernel_outside_the_profiled_launches_is_named(project: Path) -> None:
    _, text = profiled(project, completed(0, ncu_output(("axpy_kernel",))))
    assert not is_error(text), text
    assert "kernel axpy_kernel: 3 launches profiled" in text
    assert "kernel rescale_kernel: not profiled (not launched among the first 6 launches" in text


def test_a_build_error_is_an_error_observation(project: Path) -> None:
    runner = ScriptedRunner(
        [completed(), completed(), completed(1, "", "src/k.cu(5): error: identifier undefined")]
    )
    region = Region.find(project / "src" / "k.cu", "pair")
    with Benchmark(load(project), region, runner, "nvcc-opt") as bench:
        text = Toolbox.from_objects(Profile(bench)).call("profile_kernel", {"code": region.text})
    assert is_error(text) and "does not build, so there is nothing to profile" in text
    assert len(runner.calls) == 3  # never run


def test_a_region_without_kernels_needs_no_profiler(project: Path) -> None:
    tool, text = profiled(project, None, region="host")
    assert text == NO_KERNELS
    assert _runner(tool).calls == []


# the CSV


def test_details_page_csv_with_scaled_units_and_separators() -> None:
    header = (
        '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream",'
        '"Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit",'
        '"Metric Value"'
    )
    head = '"0","1","app","h","void ns::k<float>(float *, int)","1","7","(256, 1, 1)","(8, 1, 1)"'
    rows = [
        f'{head},"0","9.0","Command line profiler metrics","{name}","{unit}","{value}"'
        for name, unit, value in (
            (ncu.TIME, "usecond", "1,234.5"),
            (ncu.DRAM_BYTES_PER_S, "Tbyte/second", "3.5"),
            (ncu.DRAM_PCT, "%", "70.25"),
            (ncu.SM_PCT, "%", "n/a"),
        )
    ]
    launches = ncu.parse_csv("\n".join(["some program output", header, *rows]))
    assert len(launches) == 1 and launches[0].kernel == "k"
    values = launches[0].values
    assert values[ncu.TIME] == pytest.approx(1_234_500)
    assert values[ncu.DRAM_BYTES_PER_S] == pytest.approx(3.5e12)
    assert values[ncu.DRAM_PCT] == 70.25 and ncu.SM_PCT not in values


@pytest.mark.parametrize(
    ("shown", "name"),
    [
        ("axpy_kernel", "axpy_kernel"),
        ("axpy_kernel(float, const float *, float *, int)", "axpy_kernel"),
        ("void tiled<256, float>(const float *, float *)", "tiled"),
        ("ns::inner::k(int)", "k"),
    ],
)
def test_kernel_base_names(shown: str, name: str) -> None:
    assert ncu.base_name(shown) == name


def test_units_scale_to_nanoseconds_and_bytes_per_second() -> None:
    assert ncu.scale("msecond") == pytest.approx(1e6)
    assert ncu.scale("nsecond") == pytest.approx(1.0)
    assert ncu.scale("Gbyte/second") == pytest.approx(1e9)
    assert ncu.scale("%") == 1.0 and ncu.scale("register/thread") == 1.0
    assert ncu.number("1,024") == 1024.0 and ncu.number("n/a") is None


# the catalog: optional, never a default


def test_the_default_tools_stay_the_papers_six() -> None:
    assert list(TOOL_NAMES) == PAPER_SIX
    assert OPTIONAL_TOOLS == ("profile_kernel",)
    assert list(ALL_TOOL_NAMES) == [*PAPER_SIX, "profile_kernel"]
    assert "profile_kernel" in REGION_TOOLS
    assert choose_tools(None, parity=False, rng=random.Random(0)) == PAPER_SIX
    for seed in range(100):
        assert "profile_kernel" not in choose_tools(None, parity=True, rng=random.Random(seed))
    named = ["profile_kernel", "benchmark_code"]
    assert choose_tools(named, parity=False, rng=random.Random(0)) == list(reversed(named))


def test_it_is_declared_with_a_schema_after_the_six() -> None:
    declared = declarations()
    assert declared.names == [*PAPER_SIX, "profile_kernel"]
    schema = declared.tools["profile_kernel"].schema()["function"]
    assert set(schema["parameters"]["properties"]) == {"code", "compile_args"}
    assert "required" not in schema["parameters"]
    text = declared.prompt_text(["benchmark_code", "profile_kernel"])
    assert "profile_kernel(code: string | null = null" in text


def test_the_catalog_builds_it_only_when_asked(project: Path) -> None:
    region = Region.find(project / "src" / "k.cu", "pair")
    with open_catalog(project, region, launcher="nvcc-opt") as plain:
        assert plain.toolbox.names == PAPER_SIX
    chosen = ["benchmark_code", "profile_kernel"]
    with open_catalog(project, region, launcher="nvcc-opt", extra=chosen) as asked:
        assert asked.toolbox.names == [*PAPER_SIX, "profile_kernel"]
        assert asked.toolbox.schemas(chosen)[1]["function"]["name"] == "profile_kernel"
    with open_catalog(project, extra=["profile_kernel"]) as bare:  # no region: no region tools
        assert "profile_kernel" not in bare.toolbox.names
    with pytest.raises(ValueError, match="unknown tools"):
        open_catalog(project, region, extra=["profile_kernels"])


def test_the_tool_command_lists_and_describes_it() -> None:
    listing = CliRunner().invoke(tool_command, [])
    assert listing.exit_code == 0
    block = listing.output.strip().split("\n\n")[-1]
    assert block.startswith(
        "profile_kernel(code: string | null = null, compile_args: list[string] | null = null)\n"
        "    (needs --region FILE:NAME, the region it works on)\n"
        "    (optional: not offered to a model unless named, e.g. optimize --tools "
        "...,profile_kernel)\n"
    )
    schema = CliRunner().invoke(tool_command, ["profile_kernel", "--schema"])
    assert schema.exit_code == 0 and json.loads(schema.output)["function"]["name"] == (
        "profile_kernel"
    )
    needs = CliRunner().invoke(tool_command, ["profile_kernel"])
    assert needs.exit_code == 2 and "needs --region" in needs.output


def test_the_tool_command_calls_it(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(project)
    # Without the permission to build here the call still reaches the tool: an error observation
    # from the (unscripted, real) runner's configure, not a usage error.
    (project / "build" / "CMakeCache.txt").write_text("")
    out = CliRunner().invoke(tool_command, ["profile_kernel", "--region", "src/k.cu:pair"])
    assert out.exit_code == 1 and out.output.startswith("error: "), out.output
    assert "CMakeCache.txt names no source folder or generator" in out.output


# on a GPU: the example application's `pair` region, for real

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "saxpy-stencil"


@needs_nvcc
@pytest.mark.slow
@pytest.mark.gpu
@pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")
def test_profiles_the_example_region_on_the_gpu(tmp_path: Path, exe: str) -> None:
    if ncu.find() is None:
        pytest.skip("ncu (Nsight Compute) not installed")
    root = tmp_path / "saxpy-stencil"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns("build", ".nvcc-opt"))
    env = {**os.environ, "NVCC_OPT_STORE": str(tmp_path / "state" / "store.db")}
    env["XDG_CACHE_HOME"] = str(tmp_path / "cache")
    build = root / "build"
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    configure = ["cmake", "-S", str(root), "-B", str(build), "-G", "Ninja", launcher]
    subprocess.run(configure, check=True, capture_output=True, env=env)
    subprocess.run(["cmake", "--build", str(build)], check=True, capture_output=True, env=env)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", env["XDG_CACHE_HOME"])
    mp.setenv("NVCC_OPT_STORE", env["NVCC_OPT_STORE"])
    try:
        region = Region.find(root / "src" / "update.cu", "pair")
        with Benchmark(load(root), region, ProcessRunner(), launcher=exe) as bench:
            text = Toolbox.from_objects(Profile(bench)).call("profile_kernel", {})
    finally:
        mp.undo()
    assert not is_error(text), text
    for kernel in ("axpy_kernel", "rescale_kernel"):
        assert f"kernel {kernel}: 3 launches profiled" in text, text
    assert "% of peak (" in text and "GB/s)" in text, text
    assert "top stall reasons: " in text, text
