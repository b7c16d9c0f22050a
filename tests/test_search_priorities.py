"""Which changes the search policy tries first (from profile_kernel and compiler_analysis, or the
code without a profile), and how it spends a budget on a large translation unit.

The profiles are written by profile_kernel's own line writer from crafted counter values (no GPU
here: the counters a GPU would give are the only stand-in); the other observations use the
real tools' formats, as in test_search_policy.py."""

from __future__ import annotations

from typing import Any

from nvcc_opt.search.observe import read_analysis, read_profile
from nvcc_opt.search.policy import SearchPolicy
from nvcc_opt.tools import ncu
from nvcc_opt.tools.profile import _kernel_lines
from tests.test_search_policy import ALL_TOOLS, ANALYSIS, REGION, drive, gpu, machine_code

WITH_PROFILE = [*ALL_TOOLS, "profile_kernel"]
UNLIMITED = ANALYSIS.replace(", limited by registers", "")


def profile_text(dram: float, sm: float, stalls: dict[str, float], achieved: float = 80.0) -> str:
    values = {
        ncu.TIME: 120_000.0, ncu.DRAM_PCT: dram, ncu.DRAM_BYTES_PER_S: dram * 4.8e10,
        ncu.SM_PCT: sm, ncu.ACHIEVED_OCCUPANCY: achieved, ncu.THEORETICAL_OCCUPANCY: 100.0,
        ncu.REGISTERS: 40.0, ncu.BLOCK_SIZE: 256.0, ncu.GRID_SIZE: 4096.0,
        ncu.LIMITS["registers"]: 6.0, ncu.LIMITS["warps"]: 8.0,
    }  # fmt: skip
    total = sum(stalls.values())
    summary = ncu.Summary("rows", 3, values, sorted(stalls.items(), key=lambda kv: -kv[1]), total)
    heading = "region 'rows' (the region as it is) profiled with Nsight Compute: ..."
    return "\n".join([heading, *_kernel_lines("rows", summary, 3)])


MEMORY = profile_text(88.0, 20.0, {"long_scoreboard": 14.0, "wait": 2.0, "selected": 1.0})
COMPUTE = profile_text(20.0, 85.0, {"math_pipe_throttle": 9.0, "wait": 3.0, "selected": 1.0})


def tools_with(profile: str, analysis: str = UNLIMITED) -> Any:
    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "profile_kernel":
            return profile
        if name == "compiler_analysis":
            return analysis
        return gpu(name, args)

    return tools


def first_timed(calls: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    return next(args for name, args in calls if name == "benchmark_code")


def test_profile_format_of_the_real_tool() -> None:
    memory = read_profile(MEMORY)
    assert memory is not None and memory.bound == "memory" and memory.dram_pct == 88.0
    assert memory.stalls[0][0] == "long_scoreboard" and memory.block == 256
    assert memory.limiter == "registers"
    compute = read_profile(COMPUTE)
    assert compute is not None and compute.bound == "compute"
    assert read_profile("error: ncu (Nsight Compute) was not found on PATH") is None
    analysis = read_analysis(ANALYSIS.replace("spill stores 0 B", "spill stores 24 B"))
    assert analysis.spill_bytes == 24 and analysis.occupancy_pct == 37


def test_a_memory_bound_profile_puts_the_load_changes_first() -> None:
    calls, answer = drive(SearchPolicy(), tools_with(MEMORY), offered=WITH_PROFILE)
    assert [n for n, _ in calls][:2] == ["compiler_analysis", "profile_kernel"]
    timed = [args for name, args in calls if name == "benchmark_code"]
    first_flag = next(i for i, a in enumerate(timed) if a.get("compile_args"))
    assert any("__restrict__" in a["code"] for a in timed[:first_flag])
    explanation = answer["explanation"]
    why = explanation.split("Why each was tried, in this order:\n")[1]
    assert why.splitlines()[0].endswith(
        "profile_kernel (rows): memory-bound, DRAM 88% of peak: fewer bytes moved"
    )
    assert "long_scoreboard stalls" in why or "memory-bound" in why


def test_a_compute_bound_profile_puts_fast_math_and_flags_first() -> None:
    calls, answer = drive(SearchPolicy(), tools_with(COMPUTE), offered=WITH_PROFILE)
    assert first_timed(calls).get("compile_args") == ["-use_fast_math"]
    assert "compute-bound, SM 85% of peak" in answer["explanation"]


def test_without_a_profile_transcendental_math_times_fast_math_first() -> None:
    region = REGION.replace("sum += A[i * n + j] * x[j]", "sum += expf(A[i * n + j]) * x[j]")
    calls, answer = drive(SearchPolicy(), tools_with("", UNLIMITED), region=region)
    assert first_timed(calls).get("compile_args") == ["-use_fast_math"]
    assert "the code calls exp: fast math is timed early" in answer["explanation"]


def test_registers_that_limit_occupancy_put_register_caps_first() -> None:
    calls, answer = drive(SearchPolicy(), tools_with("", ANALYSIS))
    first = first_timed(calls)
    assert "__launch_bounds__" in first["code"] or "-maxrregcount=64" in first.get(
        "compile_args", []
    )
    assert (
        "compiler_analysis: 72 registers limit occupancy (37% occupancy)" in answer["explanation"]
    )


def test_a_kernel_that_spills_tries_register_caps_last() -> None:
    spills = ANALYSIS.replace("spill stores 0 B", "spill stores 64 B")
    calls, _ = drive(SearchPolicy(), tools_with("", spills))
    timed = [tuple(a.get("compile_args", [])) for n, a in calls if n == "benchmark_code"]
    capped = [i for i, flags in enumerate(timed) if any("maxrregcount" in f for f in flags)]
    others = [i for i, flags in enumerate(timed) if not any("maxrregcount" in f for f in flags)]
    assert capped and min(capped) > max(others[: len(others) - 2])  # combinations come after


def test_fast_math_is_timed_never_read_as_sass() -> None:
    calls, _ = drive(SearchPolicy(), machine_code)
    analysed = [a for n, a in calls if n == "compiler_analysis"]
    assert not any("-use_fast_math" in a.get("compile_args", []) for a in analysed)
    timed = [a for n, a in calls if n == "benchmark_code"]
    assert any("-use_fast_math" in a.get("compile_args", []) for a in timed)


def test_a_large_translation_unit_spends_its_budget_on_timings() -> None:
    """One compile takes 20 s, one build and run 30 s, of a 200 s budget: flag-only variants are
    timed without compiler_analysis, candidates stop when one more would not fit, and the answer
    names what the budget did not reach."""
    now = [0.0]

    def slow(name: str, args: dict[str, Any]) -> str:
        now[0] += {"compiler_analysis": 20.0, "benchmark_code": 30.0}.get(name, 1.0)
        return machine_code(name, args)

    calls, answer = drive(SearchPolicy(budget_s=200, clock=lambda: now[0]), slow)
    analysed = [a for n, a in calls[1:] if n == "compiler_analysis"]
    assert analysed and not any(a.get("compile_args") for a in analysed)
    assert now[0] <= 200 + 30  # no candidate started that could not finish
    explanation = answer["explanation"]
    assert "a large translation unit (one compile 20 s)" in explanation
    assert "not reached within the budget" in explanation
    reached = explanation.split("not reached within the budget")[1]
    assert "-Xptxas -O3" in reached or "--extra-device-vectorization" in reached


def test_a_small_translation_unit_still_reads_flag_sass() -> None:
    calls, answer = drive(SearchPolicy(), machine_code)
    analysed = [a for n, a in calls[1:] if n == "compiler_analysis"]
    assert any(a.get("compile_args") == ["-Xptxas=-O3"] for a in analysed)
    assert "large translation unit" not in answer["explanation"]


def test_a_run_time_block_size_is_learnt_from_the_profile() -> None:
    """The launch's block size is a run-time variable the search cannot resolve: without a
    profile no __launch_bounds__ is tried; with one, the size the run launched (256) is used."""
    runtime_launch = "[1 match]\nsrc/main.cu (1)\n   40 |   rows<<<grid, threads>>>(n, A, x, y);"

    def tools(profile: str) -> Any:
        def answer(name: str, args: dict[str, Any]) -> str:
            if name == "search":
                return runtime_launch if "<<<" in args["pattern"] else "[no matches]"
            return tools_with(profile)(name, args)

        return answer

    def bounded(calls: list[tuple[str, dict[str, Any]]]) -> bool:
        return any("__launch_bounds__(256)" in a["code"] for n, a in calls if "code" in a)

    without, _ = drive(SearchPolicy(), tools(""), offered=WITH_PROFILE)
    assert not bounded(without)
    learnt, _ = drive(SearchPolicy(), tools(MEMORY), offered=WITH_PROFILE)
    assert bounded(learnt)


def test_registers_that_tie_at_full_occupancy_limit_nothing() -> None:
    """At 100% occupancy registers may share "the limit" with the threads per SM (26 registers,
    256 threads: 8 blocks either way; the real tool's line on a HeCBench kernel); fewer
    registers would add no warp, so nothing is register-limited and no change is ranked for it.
    Below 100%, and from the register ceiling line, registers do limit."""
    full = ANALYSIS.replace("registers 72", "registers 26").replace(
        "3 blocks/SM, 24 of 64 warps (37% occupancy), limited by registers",
        "8 blocks/SM, 64 of 64 warps (100% occupancy), limited by registers and threads per SM",
    )
    assert not read_analysis(full).register_limited
    assert read_analysis(ANALYSIS).register_limited
    tied = ANALYSIS.replace("limited by registers", "limited by threads per SM and registers")
    assert read_analysis(tied).register_limited
    ceiling = ANALYSIS.replace(
        "    256 threads/block: 3 blocks/SM, 24 of 64 warps (37% occupancy), limited by "
        "registers\n",
        "    registers alone allow up to 24 of 64 warps per SM (37%), limited by registers at any "
        "block size\n",
    )
    assert read_analysis(ceiling).register_limited
    calls, answer = drive(SearchPolicy(), tools_with("", full), offered=ALL_TOOLS)
    assert "registers limit occupancy" not in answer["explanation"]
