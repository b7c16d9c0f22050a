"""The search policy on kernels that declare `__launch_bounds__`, and on a large translation unit:
the register cap is tuned in the bounds (ptxas ignores -maxrregcount there), and once a timing
is seen to cost more than two compiles, a flag's machine code is read before it is timed."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.policy import SearchPolicy
from tests.test_search_policy import bench_text, drive, sass_line

BOUNDED = """\
__global__ void __launch_bounds__(64, 8) corners(const int* nodes, const double* x, double* out,
                                                 int n) {
  int e = blockIdx.x * blockDim.x + threadIdx.x;
  if (e < n) {
    double c[8];
    for (int k = 0; k < 8; ++k) c[k] = x[nodes[8 * e + k]];
    double v = 0.0;
    for (int k = 0; k < 8; ++k) v += c[k] * c[(k + 3) % 8];
    out[e] = v;
  }
}
"""
SPILLING = (
    "kernel corners: corners(int const*, double const*, double*, int)\n"
    "  sm_90: registers 128, static shared 0 B, local (stack frame) 168 B, spill stores 176 B\n"
    "    <<<grid,64>>>: 64 threads/block: 8 blocks/SM, 16 of 64 warps (25% occupancy), "
    "limited by registers\n"
)


def _digest(args: dict[str, Any]) -> str:
    code, flags = args.get("code", BOUNDED), args.get("compile_args", [])
    if "__launch_bounds__(64, 4)" in code:
        return "relaxed"
    if "-use_fast_math" in flags or "compute_90a" in " ".join(flags):
        return "flags-" + "-".join(flags)
    return "region"  # every other flag and transform compiles to the region's code


def _tools(now: list[float], compile_s: float, timing_s: float) -> Any:
    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "compiler_analysis":
            now[0] += compile_s
            return SPILLING + "\n" + sass_line("corners", _digest(args))
        if name == "benchmark_code":
            now[0] += timing_s
            return bench_text(1.12 if "__launch_bounds__(64, 4)" in args["code"] else 1.0)
        return "[0 matches]"

    return tools


def test_a_spilling_bounded_kernel_gets_more_registers_from_its_bounds_not_maxrregcount() -> None:
    now = [0.0]
    calls, answer = drive(
        SearchPolicy(budget_s=3000, clock=lambda: now[0]), _tools(now, 2.0, 20.0), region=BOUNDED
    )
    flags = {f for _, args in calls for f in args.get("compile_args", [])}
    assert not any("maxrregcount" in f for f in flags)  # ignored by ptxas for bounded kernels
    first_change = next(args for name, args in calls[1:] if "code" in args)
    assert "__launch_bounds__(64, 4)" in first_change["code"]  # the spills rank it first
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert not any("__launch_bounds__(64, 16)" in code for code in timed)  # doubling: spills more
    assert "__launch_bounds__(64, 4)" in answer["final_code"]
    assert "176 B spilled at 128 registers" in answer["explanation"]


def test_on_a_large_unit_flags_are_read_first_once_a_timing_costs_more() -> None:
    """Compiles of 14 s, timings of 120 s: after the first timing the flags' machine code is
    read first, and the flags that change nothing are not timed."""
    now = [0.0]
    calls, answer = drive(
        SearchPolicy(budget_s=3000, clock=lambda: now[0]), _tools(now, 14.0, 120.0), region=BOUNDED
    )
    timed_flags = [
        tuple(args.get("compile_args", [])) for name, args in calls if name == "benchmark_code"
    ]
    assert ("-Xptxas=-O3",) not in timed_flags and (
        "--extra-device-vectorization",
    ) not in timed_flags
    analysed = [args.get("compile_args") for name, args in calls if name == "compiler_analysis"]
    assert ["-Xptxas=-O3"] in analysed
    assert ("-use_fast_math",) in timed_flags  # changes results: the checks under timing decide
    assert "-Xptxas -O3: the same machine code as the region; not timed" in answer["explanation"]
    assert "timed without reading" not in answer["explanation"]


def test_on_a_large_unit_with_quick_timings_flags_are_timed_without_reading() -> None:
    now = [0.0]
    calls, answer = drive(
        SearchPolicy(budget_s=3000, clock=lambda: now[0]), _tools(now, 14.0, 20.0), region=BOUNDED
    )
    analysed = [args.get("compile_args") for name, args in calls if name == "compiler_analysis"]
    assert not any(flags for flags in analysed)  # a compile costs nearly what a timing does
    timed_flags = {
        f for name, args in calls if name == "benchmark_code" for f in args.get("compile_args", [])
    }
    assert "-Xptxas=-O3" in timed_flags
    note = next(line for line in answer["explanation"].splitlines() if "timed without" in line)
    assert "one compile 14 s" in note and "-Xptxas -O3" in note and "-use_fast_math" not in note
