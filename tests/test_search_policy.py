"""The search policy behind the model interface: what it calls, in which order, what it answers.

The tools here are a deterministic stand-in at the edge (the timings a GPU would give); the
prompt is the real template, and the observations use the real tools' formats."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from nvcc_opt.agent.answer import ANSWER_FORMAT, find_answer
from nvcc_opt.agent.backends import load
from nvcc_opt.agent.model import ModelError
from nvcc_opt.agent.prompt import fenced
from nvcc_opt.search.observe import read_analysis, read_task
from nvcc_opt.search.policy import SearchPolicy
from nvcc_opt.tools.bench import describe, read_benchmark
from nvcc_opt.tools.prompt import render
from nvcc_opt.verify.checks import CheckResult
from nvcc_opt.verify.stats import compare
from nvcc_opt.verify.verdict import decide

REGION = """\
__global__ void rows(int n, const float* A, const float* x, float* y) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) {
    float sum = 0.0f;
    for (int j = 0; j < n; ++j) sum += A[i * n + j] * x[j];
    y[i] = sum;
  }
}
"""
LAUNCH = "[1 match]\nsrc/main.cu (1)\n   40 |   rows<<<grid, kBlock>>>(n, A, x, y);"
CONSTANT = "[1 match]\nsrc/params.h (1)\n    3 | constexpr int kBlock = 256;"
ANALYSIS = (
    "kernel rows: rows(int, float const*, float const*, float*)\n"
    "  sm_90: registers 72, static shared 0 B, local (stack frame) 0 B, spill stores 0 B\n"
    "    256 threads/block: 3 blocks/SM, 24 of 64 warps (37% occupancy), limited by registers\n"
)
ALL_TOOLS = ["benchmark_code", "compiler_analysis", "search", "file_viewer", "list_dir"]


def messages(region: str = REGION, target: str = "sm_90") -> list[dict[str, Any]]:
    system = render("system", gpu="NVIDIA H200", compile_target=target, answer_format=ANSWER_FORMAT)
    user = render(
        "user", region_name="rows", region_kind="kernel", start_line="3", end_line="11",
        path="src/k.cu", region_block=fenced(region), baseline="1.5 ms per run",
        tool_catalog="(catalog)",
    )  # fmt: skip
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def schemas(names: list[str]) -> list[dict[str, Any]]:
    return [{"type": "function", "function": {"name": n, "parameters": {}}} for n in names]


def bench_text(speedup: float | None, correct: bool = True) -> str:
    """A benchmark_code observation as the tool writes it, for a given true speedup."""
    if not correct:
        return describe(decide(True, "", CheckResult(False, ("numbers_differ: checksum",)), None))
    base = [1.0 + 0.001 * (i % 3) for i in range(10)]
    factor = speedup or 1.0
    cand = [t / factor for t in base]
    return describe(decide(True, "", CheckResult(True, ()), compare(base, cand)))


Tools = Callable[[str, dict[str, Any]], str]


def drive(
    policy: SearchPolicy, tools: Tools, offered: list[str] = ALL_TOOLS, region: str = REGION
) -> tuple[list[tuple[str, dict[str, Any]]], dict[str, Any]]:
    """Run the policy as the loop would; returns (tool calls, final answer)."""
    history = messages(region)
    calls: list[tuple[str, dict[str, Any]]] = []
    for _ in range(60):
        reply = policy.complete(history, schemas(offered))
        if not reply.tool_calls:
            answer = find_answer(reply.text)
            assert answer is not None and not isinstance(answer, str), reply.text
            return calls, answer.model_dump()
        (call,) = reply.tool_calls
        arguments = json.loads(call.arguments)
        calls.append((call.name, arguments))
        history.append({"role": "assistant", "content": reply.text})
        history.append(
            {"role": "tool", "tool_call_id": call.id, "content": tools(call.name, arguments)}
        )
    raise AssertionError("the policy never answered")


def gpu(name: str, args: dict[str, Any]) -> str:
    """restrict helps 10%, fast math 5% more, __ldg breaks correctness, the rest does nothing."""
    if name == "compiler_analysis":
        return ANALYSIS
    if name == "search":
        return LAUNCH if "<<<" in args["pattern"] else CONSTANT
    code, flags = args["code"], args.get("compile_args", [])
    if "__ldg" in code:
        return bench_text(None, correct=False)
    speedup = (1.10 if "__restrict__" in code else 1.0) * (
        1.05 if "-use_fast_math" in flags else 1.0
    )
    return bench_text(speedup)


def test_the_prompt_template_is_what_the_policy_reads() -> None:
    task = read_task(messages())
    assert task.region == REGION and task.target == "sm_90"


def test_observation_formats_of_the_real_tools() -> None:
    improved = read_benchmark(bench_text(1.2))
    assert improved.improved and improved.speedup == pytest.approx(1.2, rel=1e-3)
    wrong = read_benchmark(bench_text(None, correct=False))
    assert wrong.verdict == "rejected" and "numbers_differ" in wrong.why and wrong.speedup == 1.0
    assert read_benchmark("error: no GPU here: the application cannot run").verdict == "error"
    assert read_analysis(ANALYSIS).registers == 72 and read_analysis(ANALYSIS).register_limited


def test_search_measures_each_change_then_combines_what_helped() -> None:
    calls, answer = drive(SearchPolicy(), gpu)
    names = [name for name, _ in calls]
    assert names[:3] == ["compiler_analysis", "search", "search"]
    assert calls[1][1] == {"pattern": r"\brows\b\s*(<[^;()]*?>)?\s*(<<<|\)?\s*,)", "regex": True}
    tried = [args for name, args in calls if name == "benchmark_code"]
    flags_tried = {f for args in tried for f in args.get("compile_args", [])}
    assert {"-use_fast_math", "-Xptxas=-O3", "--extra-device-vectorization"} <= flags_tried
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags_tried
    assert {"-maxrregcount=64", "-maxrregcount=48"} <= flags_tried  # below 72, register-limited
    assert any("__launch_bounds__(256)" in args["code"] for args in tried)
    assert "__restrict__" in answer["final_code"] and "__ldg" not in answer["final_code"]
    assert answer["compile_args"] == ["-use_fast_math"]
    explanation = answer["explanation"]
    headline = explanation.splitlines()[0]  # what a report shows as "what changed"
    assert headline.startswith("Search policy: ") and headline.endswith(
        "(1.155x measured by benchmark_code)"
    )
    assert "-use_fast_math" in headline and "const __restrict__" in headline
    assert headline.startswith("Search policy: [code changes + fast math: results change] ")
    assert "Numerics: fast math changes results" in explanation and "rtol" in explanation
    assert "-use_fast_math" in explanation and "1.050x, improved alone" in explanation
    assert "__ldg() for loads of read-only data: rejected: numbers_differ" in explanation
    sent = [(args["code"], tuple(args.get("compile_args", []))) for args in tried]
    assert len(sent) == len(set(sent))  # restrict on all holds const's: their pair is not timed
    assert "the same code as __restrict__ on every pointer parameter alone" in explanation


def test_nothing_helps_means_the_region_unchanged() -> None:
    calls, answer = drive(SearchPolicy(), lambda n, a: ANALYSIS if n == "compiler_analysis" else (
        LAUNCH if n == "search" else bench_text(1.0)))  # fmt: skip
    assert answer["final_code"] == REGION and not answer.get("compile_args")
    assert answer["explanation"].startswith("Search policy: no change was measured faster")


def test_no_gpu_stops_the_search_at_the_first_benchmark() -> None:
    no_gpu = "error: no GPU here: the application cannot run on this machine"
    calls, answer = drive(SearchPolicy(), lambda n, a: no_gpu if n == "benchmark_code" else "")
    assert [n for n, _ in calls].count("benchmark_code") == 1
    assert answer["final_code"] == REGION and "no GPU here" in answer["explanation"]


def test_the_budget_of_tool_calls_holds() -> None:
    calls, answer = drive(SearchPolicy(max_calls=5), gpu)
    assert len(calls) == 5
    assert answer["final_code"]


def test_without_search_no_aliasing_promise_so_no_restrict() -> None:
    calls, answer = drive(SearchPolicy(), gpu, offered=["benchmark_code"])
    assert all(name == "benchmark_code" for name, _ in calls)
    assert all("__restrict__" not in args["code"] for _, args in calls)
    assert answer["compile_args"] == ["-use_fast_math"]
    headline = answer["explanation"].splitlines()[0]  # fast math alone is said first
    assert headline.startswith("Search policy: [fast math, no code change: results change] ")


def test_without_benchmark_code_nothing_is_claimed() -> None:
    calls, answer = drive(SearchPolicy(), gpu, offered=["compiler_analysis", "search"])
    assert calls == [] and answer["final_code"] == REGION


def test_spec_and_bad_prompts() -> None:
    policy = load("search:?budget_s=30&max_calls=7")
    assert isinstance(policy, SearchPolicy) and policy.budget_s == 30 and policy.max_calls == 7
    with pytest.raises(ValueError, match="unknown search option"):
        load("search:?turns=3")
    with pytest.raises(ModelError, match="cannot read this prompt"):
        SearchPolicy().complete([{"role": "user", "content": "hello"}], schemas(ALL_TOOLS))


def sass_line(kernel: str, digest: str) -> str:
    return f"SASS of {kernel} (sm_90, cuobjdump): 120 instructions, digest {digest}\n"


def machine_code(name: str, args: dict[str, Any]) -> str:
    """Like `gpu`, with SASS digests: the ptxas and vectorization flags and the sm_90a target
    change no instruction; const __restrict__ and __restrict__ give the same code."""
    if name != "compiler_analysis":
        return gpu(name, args)
    code, flags = args.get("code", REGION), args.get("compile_args", [])
    if "__restrict__" in code:
        digest = "restricted"
    elif "-use_fast_math" in flags or "-maxrregcount" in " ".join(flags):
        digest = f"flags-{'-'.join(flags)}"
    elif code != REGION:
        digest = f"code-{abs(hash(code)) % 10**8}"
    else:
        digest = "region"
    return ANALYSIS + "\n" + sass_line("rows", digest)


def test_a_change_with_the_regions_machine_code_is_not_timed() -> None:
    calls, answer = drive(SearchPolicy(), machine_code)
    timed = [args for name, args in calls if name == "benchmark_code"]
    flags = {f for args in timed for f in args.get("compile_args", [])}
    assert not flags & {"-Xptxas=-O3", "--extra-device-vectorization"}
    assert "-gencode=arch=compute_90a,code=sm_90a" not in flags and "-use_fast_math" in flags
    assert (
        sum("__restrict__" in args["code"] and not args.get("compile_args") for args in timed) == 1
    )
    analysed = [args for name, args in calls[1:] if name == "compiler_analysis"]
    assert any(args.get("compile_args") == ["-Xptxas=-O3"] for args in analysed)
    explanation = answer["explanation"]
    assert "-Xptxas -O3: the same machine code as the region; not timed" in explanation
    assert "__restrict__ on every pointer parameter: the same machine code as const" in explanation
    assert "__restrict__" in answer["final_code"] and answer["compile_args"] == ["-use_fast_math"]


LAUNCHED = (
    REGION
    + """\
void launch(int n, const float* A, const float* x, float* y) {
  const int block = 256;
  rows<<<(n + block - 1) / block, block>>>(n, A, x, y);
}
"""
)


def test_launch_changes_are_timed_even_when_the_kernels_code_is_the_same() -> None:
    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "compiler_analysis":
            return ANALYSIS + "\n" + sass_line("rows", "same-for-all")
        return bench_text(1.2 if "block = 128" in args["code"] else 1.0)

    policy = SearchPolicy()
    history = messages(region=LAUNCHED)
    timed: list[str] = []
    for _ in range(60):
        reply = policy.complete(history, schemas(ALL_TOOLS))
        if not reply.tool_calls:
            break
        (call,) = reply.tool_calls
        arguments = json.loads(call.arguments)
        if call.name == "benchmark_code":
            timed.append(arguments["code"])
        history += [
            {"role": "assistant", "content": reply.text},
            {"role": "tool", "tool_call_id": call.id, "content": tools(call.name, arguments)},
        ]
    answer = find_answer(reply.text)
    assert answer is not None and not isinstance(answer, str)
    assert any("block = 128" in code for code in timed) and any(
        "block = 512" in code for code in timed
    )
    assert "const int block = 128;" in answer.final_code
    # kernel-only changes with the region's machine code are not timed ...
    assert not any("__restrict__" in code or "__ldg" in code for code in timed)
    # ... unless they change results (a warp per row sums in another order): the checks judge
    assert any("nvcc_opt_row" in code for code in timed)
    assert any("(n + block - 1) / block) * 32" in code for code in timed)  # the launch changes


def test_a_launch_over_several_lines_is_read_to_its_end() -> None:
    split = "[1 match]\nsrc/main.cu (1)\n   40 |   rows<<<grid, kBlock>>>(n, A,"
    window = (
        "[src/main.cu: lines 40-47 of 60]\n   40 |   rows<<<grid, kBlock>>>(n, A,\n"
        "   41 |                          x, y);\n   42 | }"
    )

    def tools(name: str, args: dict[str, Any]) -> str:
        if name == "search" and "<<<" in args["pattern"]:
            return split
        if name == "file_viewer":
            assert args == {"path": "src/main.cu", "start": 40, "end": 47}
            return window
        return gpu(name, args)

    calls, answer = drive(SearchPolicy(), tools, offered=[*ALL_TOOLS])
    assert [name for name, _ in calls][:3] == ["compiler_analysis", "search", "file_viewer"]
    timed = [args["code"] for name, args in calls if name == "benchmark_code"]
    assert any("__launch_bounds__(256)" in code for code in timed)  # the block size was found
    assert "__restrict__" in answer["final_code"]  # and the whole argument list: no aliasing


def test_near_the_budget_end_it_combines_what_helped_before_trying_more_alone() -> None:
    """Each benchmark takes 50 s of a 340 s budget. const restrict helps first, __launch_bounds__
    at 300 s: with 40 s left, the flags alone wait, so the budget's end cannot fall between the
    two improvements and their combination. (Occupancy not limited by registers: the default
    order, which puts const restrict before __launch_bounds__.)"""
    now = [0.0]

    def slow_gpu(name: str, args: dict[str, Any]) -> str:
        if name == "compiler_analysis":
            return ANALYSIS.replace(", limited by registers", "")
        if name != "benchmark_code":
            return gpu(name, args)
        now[0] += 50.0
        code = args["code"]
        const_only = "const float* __restrict__ A" in code and "float* __restrict__ y" not in code
        speedup = (1.10 if const_only else 1.0) * (1.05 if "__launch_bounds__" in code else 1.0)
        return bench_text(speedup)

    calls, answer = drive(SearchPolicy(budget_s=340, clock=lambda: now[0]), slow_gpu)
    tried = [args for name, args in calls if name == "benchmark_code"]
    assert "__launch_bounds__" in tried[-2]["code"] and "__restrict__" not in tried[-2]["code"]
    assert "__launch_bounds__" in tried[-1]["code"] and "__restrict__" in tried[-1]["code"]
    assert not any(a.get("compile_args") for a in tried)  # the flags waited
    assert "__restrict__" in answer["final_code"] and "__launch_bounds__" in answer["final_code"]
    explanation = answer["explanation"]
    assert "(1.155x measured by benchmark_code)" in explanation.splitlines()[0]
    assert "not tried alone, to leave time to combine what helped: " in explanation
    assert "-use_fast_math" in explanation.split("not tried alone")[1]  # named, not lost
    assert now[0] == 350  # the combination started within the budget


def test_with_time_to_spare_every_change_is_tried_alone_first() -> None:
    calls, answer = drive(SearchPolicy(), gpu)
    assert "not tried alone" not in answer["explanation"]


def test_the_spec_forms_the_help_shows_all_load() -> None:
    """`search?budget_s=S` (as SPEC_FORMS and --help write it) and `search:budget_s=S` both work."""
    for spec in ("search?budget_s=7&max_calls=3", "search:budget_s=7&max_calls=3"):
        policy = load(spec)
        assert isinstance(policy, SearchPolicy), spec
        assert (policy.budget_s, policy.max_calls) == (7, 3), spec


def test_only_tries_the_named_changes_and_says_what_it_left() -> None:
    policy = load("search?only=fast_math,maxrregcount7")
    assert isinstance(policy, SearchPolicy)
    calls, answer = drive(policy, gpu)
    tried = [args for name, args in calls if name == "benchmark_code"]
    assert [args.get("compile_args") for args in tried] == [["-use_fast_math"]]
    assert all(args["code"] == REGION for args in tried)
    assert answer["compile_args"] == ["-use_fast_math"] and answer["final_code"] == REGION
    explanation = answer["explanation"]
    assert "not tried (only=fast_math,maxrregcount7): " in explanation
    assert "asked for but not applicable to this region: maxrregcount7" in explanation


def test_only_rejects_names_no_change_has() -> None:
    with pytest.raises(ValueError, match=r"only: unknown change\(s\) \['fastmath'\]"):
        load("search?only=fastmath")
