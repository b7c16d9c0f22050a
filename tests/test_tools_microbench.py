"""microbench_code with real nvcc: compile errors at the model's lines, the harness header, parsed
timings and checksums, timeouts, refused flags, capped output, fresh runs; kernels on a GPU only."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from nvcc_opt.toolbox.output import LIMIT_CHARS
from nvcc_opt.toolbox.schema import Toolbox, is_error
from nvcc_opt.tools.microbench import (
    HEADER,
    FreshRun,
    Microbench,
    MicrobenchError,
    mismatches,
    parse_output,
)
from nvcc_opt.workspace.runner import GRACE_S, ProcessRunner, ScriptedRunner, completed
from tests.conftest import gpu_available, needs_nvcc

needs_gpu = pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU")

# Host code only, so it runs without a GPU: sizes from argv, inputs from NVCC_OPT_SEED.
HOST_PROGRAM = """#include "nvcc_opt_bench.cuh"

int main(int argc, char** argv) {
    const auto n = static_cast<std::size_t>(nvcc_opt::int_arg(argc, argv, 1, 1000));
    std::vector<double> x(n);
    nvcc_opt::random_fill(x, 0);
    std::vector<double> y(n);
    nvcc_opt::time_host("scale x", 20, [&] {
        for (std::size_t i = 0; i < n; ++i) y[i] = 2.0 * x[i];
    });
    nvcc_opt::report_checksum("y", y);
    std::printf("done with %zu values\\n", n);
    return 0;
}
"""

# Every helper of the header; compiled only (kernels cannot run here).
EVERY_HELPER = """#include "nvcc_opt_bench.cuh"

__global__ void half_kernel(const float* in, float* out, int n) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n / 2) out[i] = 2.0f * in[i];  // the second half is never written
}

int main(int argc, char** argv) {
    const int n = static_cast<int>(nvcc_opt::int_arg(argc, argv, 1, 1 << 16));
    std::vector<float> host(n);
    nvcc_opt::random_fill(host, 0);
    std::vector<int> counts(4);
    nvcc_opt::random_fill(counts, 1);
    nvcc_opt::device_buffer<float> in(host);
    nvcc_opt::device_buffer<float> out(n);
    nvcc_opt::device_buffer<int> scratch(counts.size());
    scratch.upload(counts);
    nvcc_opt::time_kernel("half", 10, [&] {
        half_kernel<<<(n + 255) / 256, 256>>>(in.data(), out.data(), n);
    });
    nvcc_opt::time_host("host", 2, [] {});
    NVCC_OPT_CHECK(cudaDeviceSynchronize());
    nvcc_opt::report_checksum("out", out);
    nvcc_opt::report_checksum("counts", scratch.download());
    return 0;
}
"""


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory) -> Microbench:
    work = tmp_path_factory.mktemp("microbench")
    return Microbench(ProcessRunner(), work, run_timeout_s=20)


def _call(bench: Microbench, **args: object) -> str:
    return Toolbox.from_objects(bench).call("microbench_code", args)


def _fields(report: str, label: str) -> list[str]:
    return next(line for line in report.splitlines() if line.strip().startswith(label)).split()


@needs_nvcc
def test_header_compiles_with_every_helper(tmp_path: Path) -> None:
    (tmp_path / "all.cu").write_text(EVERY_HELPER)
    done = subprocess.run(
        ["nvcc", "-c", "-arch=sm_90", f"-I{HEADER.parent}", "-Xcompiler=-Wall,-Wextra", "all.cu"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""  # not a warning from the header either
    assert (tmp_path / "all.o").is_file()


@needs_nvcc
def test_compile_errors_name_the_models_lines(bench: Microbench) -> None:
    source = '#include "nvcc_opt_bench.cuh"\n\nint main() {\n    return undefined_thing;\n}\n'
    report = _call(bench, source=source)
    assert report.startswith("compiled: no")
    assert 'bench.cu(4): error: identifier "undefined_thing" is undefined' in report
    assert str(bench.workdir) not in report
    assert "ran:" not in report


@needs_nvcc
def test_host_program_runs_and_its_lines_are_parsed(bench: Microbench) -> None:
    report = _call(bench, source=HOST_PROGRAM, args=["5000"])
    assert not is_error(report), report
    assert report.startswith("compiled: yes\nran: exit status 0")
    name, median, least, runs = _fields(report, "scale_x")  # spaces would split the line
    assert name == "scale_x" and float(median) >= float(least) > 0 and runs == "5"
    assert _fields(report, "y")[-1] == "n=5000"
    assert "done with 5000 values" in report
    assert "NVCC_OPT_TIME" not in report  # parsed into the table, not repeated


@needs_nvcc
def test_fresh_runs_change_inputs_by_seed_and_size(bench: Microbench) -> None:
    runs = bench.fresh_run(HOST_PROGRAM, seeds=[7, 8, 7], extra_args=[["321"]])
    assert [(r.seed, r.args) for r in runs] == [
        (7, ()),
        (7, ("321",)),
        (8, ()),
        (8, ("321",)),
        (7, ()),
        (7, ("321",)),
    ]
    assert all(r.completed.ok for r in runs)
    sums = [r.parsed.results[0].checksum for r in runs]
    assert sums[0] == sums[4] and sums[0] != sums[2]  # same seed, same inputs; new seed, new
    assert [r.parsed.results[0].n for r in runs] == [1000, 321] * 3
    assert mismatches(runs, runs) == []
    wrong = bench.fresh_run(HOST_PROGRAM.replace("2.0 * x[i]", "2.0 * x[i] + 0.01"), seeds=[7, 8])
    found = mismatches(runs, wrong)
    assert len(found) == 2 and all("result y: checksum" in p for p in found)


def test_fresh_runs_refuse_the_exploration_seed(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="seeds other than 1"):
        Microbench(ScriptedRunner([]), tmp_path).fresh_run(HOST_PROGRAM, seeds=[1, 2])


def test_fresh_runs_of_a_program_that_does_not_build(tmp_path: Path) -> None:
    runner = ScriptedRunner([completed(1, "", "bench.cu(3): error: expected a ;\n")])
    with pytest.raises(MicrobenchError, match=r"bench.cu\(3\): error"):
        Microbench(runner, tmp_path).fresh_run("int main() {}", seeds=[2])


def test_a_compiler_that_hangs_is_reported(tmp_path: Path) -> None:
    runner = ScriptedRunner([completed(-9, timed_out=True)])
    report = _call(Microbench(runner, tmp_path, compile_timeout_s=5), source=HOST_PROGRAM)
    assert report.startswith("compiled: no") and "the compiler timed out after 5 s" in report
    assert runner.calls[0].timeout_s == 5 and runner.calls[0].writable == (runner.calls[0].cwd,)


@needs_nvcc
def test_a_hung_program_is_killed_at_the_timeout(tmp_path: Path) -> None:
    bench = Microbench(ProcessRunner(), tmp_path, run_timeout_s=1)
    source = (
        "#include <chrono>\n#include <cstdio>\n#include <thread>\n"
        'int main() {\n    std::puts("started");\n    std::fflush(stdout);\n'
        "    for (;;) std::this_thread::sleep_for(std::chrono::seconds(1));\n}\n"
    )
    report = _call(bench, source=source)
    ran = " ".join(_fields(report, "ran:"))
    assert "timed out after 1 s; process group killed" in ran
    assert float(ran.split(" in ")[-1].split()[0]) < 1 + GRACE_S + 1
    assert "started" in report  # what it printed before it hung


@needs_nvcc
def test_failures_of_the_program_are_reported(bench: Microbench) -> None:
    source = '#include <cstdio>\nint main() { std::fputs("bad input\\n", stderr); return 3; }\n'
    report = _call(bench, source=source)
    assert "ran: exit status 3" in report
    assert "stderr:\nbad input" in report
    assert "timings: none reported" in report


@pytest.mark.parametrize(
    ("args", "why"),
    [
        (["-o", "/etc/passwd"], "'-o' is refused: not an option"),
        (["-o", "other"], "'-o' is refused: not an option"),
        (["--output-file=x"], "not an option"),
        (["-include", "/x"], "not an option"),
        (["-I../other"], "not an option"),
        (["-ccbin", "sh"], "not an option"),
        (["--options-file", "flags.txt"], "not an option"),
        (["-E"], "not an option"),
        (["-run"], "not an option"),
        (["--std=c++17"], "not an option"),
        (["-lcublas"], "not an option"),
        (["-DX=1;rm"], "it holds ';'"),
        (["-DX=$(id)"], "it holds '$'"),
        (["-use_fast_math", "evil.cu"], "'evil.cu' is refused: not an option: a value"),
        (["-Xcompiler", "-O2 -g"], "it holds ' '"),
        (["-maxrregcount", "32", "stray"], "'stray' is refused"),
    ],
)
def test_forbidden_compile_args_are_refused_before_compiling(
    tmp_path: Path, args: list[str], why: str
) -> None:
    runner = ScriptedRunner([])
    report = _call(Microbench(runner, tmp_path), source=HOST_PROGRAM, compile_args=args)
    assert is_error(report) and why in report, report
    assert "only code-generation options are allowed" in report
    assert runner.calls == []


def test_code_generation_flags_reach_the_compile_command(tmp_path: Path) -> None:
    """The tool's program is standalone: any GPU target's arch-specific variant is syntax."""
    runner = ScriptedRunner([completed(1, stderr="bench.cu(1): error: stop here")])
    args = ["-use_fast_math", "-Xptxas", "-v", "-maxrregcount", "32", "-Xptxas=-O3,-dlcm=cg"]
    args += ["-lineinfo", "--extra-device-vectorization", "-arch=sm_100a"]
    report = _call(Microbench(runner, tmp_path), source=HOST_PROGRAM, compile_args=args)
    assert report.startswith("compiled: no"), report
    (call,) = runner.calls
    assert list(call.argv[-3 - len(args) : -3]) == args


def test_the_compile_command_adds_the_flags_before_the_source(tmp_path: Path) -> None:
    bench = Microbench(ScriptedRunner([]), tmp_path, nvcc="/opt/nvcc", arch="sm_80")
    assert bench.compile_command(["-use_fast_math"]) == [
        "/opt/nvcc",
        "-O3",
        "-arch=sm_80",
        "-lineinfo",
        "-I.",
        "-use_fast_math",
        "-o",
        "bench",
        "bench.cu",
    ]


@needs_nvcc
def test_long_output_is_capped_keeping_the_tables(bench: Microbench) -> None:
    source = HOST_PROGRAM.replace(
        "return 0;", 'for (int i = 0; i < 200000; ++i) std::printf("line %d\\n", i);\n    return 0;'
    )
    report = _call(bench, source=source)
    assert len(report) < LIMIT_CHARS
    assert "scale" in report and "checksum=" in report
    assert "[output cut:" in report
    assert "line 199999" in report  # the end of a log is kept


def test_parse_output_reads_lines_and_sets_aside_malformed_ones() -> None:
    parsed = parse_output(
        "hello\n"
        "NVCC_OPT_TIME name=k ms=0.5 min=0.4 runs=5 reps=10\n"
        "NVCC_OPT_RESULT name=out checksum=nan abssum=3 n=4 nonfinite=2\r\n"
        "NVCC_OPT_TIME name=k ms=fast\n"
        "NVCC_OPT_RESULTS\n"
        "bye\n"
    )
    assert [(t.name, t.ms, t.min_ms, t.runs) for t in parsed.timings] == [("k", 0.5, 0.4, 5)]
    (result,) = parsed.results
    assert (result.name, result.n, result.nonfinite, result.abssum) == ("out", 4, 2, 3.0)
    assert parsed.malformed == ("NVCC_OPT_TIME name=k ms=fast", "NVCC_OPT_RESULTS")
    assert parsed.other == "hello\nbye\n"


def test_mismatches_name_what_differs() -> None:
    def run(text: str, status: int = 0) -> FreshRun:
        return FreshRun(2, ("8",), completed(status, text), parse_output(text))

    line = "NVCC_OPT_RESULT name=out checksum={} abssum=100 n=8 nonfinite={}\n"
    good = run(line.format(1.0, 0))
    assert mismatches([good], [run(line.format(1.0 + 1e-4, 0))]) == []
    assert mismatches([good], [run(line.format(1.1, 0))]) == [
        "seed 2 args ['8']: result out: checksum 1.1, expected 1"
    ]
    assert "nonfinite=4" in mismatches([good], [run(line.format(1.0, 4))])[0]
    assert mismatches([good], [run("")]) == ["seed 2 args ['8']: result out missing"]
    assert mismatches([good], [run("", 1)]) == ["seed 2 args ['8']: exit status 1"]


@pytest.mark.gpu
@needs_gpu
def test_unwritten_outputs_show_as_nan_on_a_gpu(bench: Microbench) -> None:
    report = _call(bench, source=EVERY_HELPER, args=["4096"])
    assert "ran: exit status 0" in report, report
    assert float(_fields(report, "half")[1]) > 0
    out = _fields(report, "out")
    assert "n=4096" in out and "nonfinite=2048" in out  # the poison shows where nothing wrote
    runs = bench.fresh_run(EVERY_HELPER, seeds=[5])
    assert runs[0].parsed.results[0].nonfinite == 1 << 15
