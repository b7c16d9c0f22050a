"""The session prompts: templates that fail loudly, tool choice, and a prompt for a real region."""

from __future__ import annotations

import dataclasses
import random
import re
from pathlib import Path

import pytest

from nvcc_opt.agent.answer import ANSWER_FORMAT, FinalAnswer
from nvcc_opt.agent.prompt import PromptError, fenced
from nvcc_opt.agent.prompt import render as render_agent
from nvcc_opt.tools.catalog import TOOL_NAMES, declarations
from nvcc_opt.tools.prompt import Prompt, build, choose_tools, render
from nvcc_opt.tools.region import Region

FIXTURE = Path(__file__).parent / "fixtures" / "hostapp"


@pytest.fixture
def region() -> Region:
    return Region.find(FIXTURE / "src" / "work.cu", "accumulate")


def make(region: Region, tools: list[str] | None = None, baseline: float | None = 3.402) -> Prompt:
    return build(
        region,
        project_root=FIXTURE,
        baseline_ms=baseline,
        gpu="NVIDIA H200",
        compile_target="sm_90",
        tools=list(TOOL_NAMES) if tools is None else tools,
    )


# rendering


def test_repair_fills_the_problem_and_leaves_dollars_in_values_alone() -> None:
    text = render_agent("repair", problem="final_code is $missing")
    assert text.startswith("Your final answer could not be used: final_code is $missing\n")
    assert "one repair allowed" in text
    assert "$" not in text.replace("$missing", "")


def test_a_missing_value_names_the_template_and_the_variable() -> None:
    with pytest.raises(PromptError, match=r"'system'.*needs a value.*'answer_format'"):
        render("system", gpu="NVIDIA H200", compile_target="sm_90")


def test_an_unused_value_names_the_template_and_the_variable() -> None:
    with pytest.raises(PromptError, match=r"'repair'.*does not use.*'region'"):
        render_agent("repair", problem="x", region="y")


@pytest.mark.parametrize("name", ["nosuch", "../prompt", "system.txt", ""])
def test_an_unknown_template_is_an_error(name: str) -> None:
    with pytest.raises(PromptError, match="no prompt template"):
        render(name)


# choosing tools


def test_by_default_all_six_tools_are_offered() -> None:
    assert choose_tools(None, parity=False, rng=random.Random(0)) == list(TOOL_NAMES)


def test_a_subset_comes_back_in_catalog_order_once() -> None:
    chosen = choose_tools(["search", "benchmark_code", "search"], parity=False, rng=random.Random())
    assert chosen == ["benchmark_code", "search"]


def test_unknown_tools_are_listed() -> None:
    with pytest.raises(PromptError, match=r"\['grep', 'run_shell'\]"):
        choose_tools(["search", "run_shell", "grep"], parity=False, rng=random.Random())


def test_a_subset_and_parity_exclude_each_other() -> None:
    with pytest.raises(PromptError, match="not both"):
        choose_tools(["search"], parity=True, rng=random.Random())


def test_parity_offers_four_to_six_with_benchmark_code_in_catalog_order() -> None:
    seen = set()
    for seed in range(300):
        chosen = choose_tools(None, parity=True, rng=random.Random(seed))
        assert 4 <= len(chosen) <= 6
        assert "benchmark_code" in chosen
        assert chosen == [name for name in TOOL_NAMES if name in chosen]
        seen.add(tuple(chosen))
    assert {len(c) for c in seen} == {4, 5, 6}
    assert len(seen) == 16  # C(5,3) + C(5,4) + C(5,5): every allowed set comes up


def test_parity_is_deterministic_for_a_seed() -> None:
    first = [choose_tools(None, parity=True, rng=random.Random(s)) for s in range(20)]
    again = [choose_tools(None, parity=True, rng=random.Random(s)) for s in range(20)]
    assert first == again


# building the prompt for a real region


def test_the_user_prompt_holds_the_region_and_its_place(region: Region) -> None:
    user = make(region).user
    assert "`accumulate`" in user
    assert "a function definition, lines 5-16 of `src/work.cu`" in user
    assert f"```cuda\n{region.text}```" in user
    assert region.text.startswith("double accumulate(const double* x, int n, int passes)")


def test_the_baseline_is_shown_or_said_to_be_unmeasured(region: Region) -> None:
    assert "Baseline time: 3.402 ms per run" in make(region).user
    assert "Baseline time: 1235 ms per run" in make(region, baseline=1234.6).user
    assert "Baseline time: not measured yet." in make(region, baseline=None).user
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(PromptError, match="baseline"):
            make(region, baseline=bad)


def test_only_the_offered_tools_are_described(region: Region) -> None:
    offered = ["benchmark_code", "file_viewer", "search", "list_dir"]
    prompt = make(region, offered)
    assert prompt.tools == offered
    assert prompt.user.endswith(declarations().prompt_text(offered) + "\n")
    assert "microbench_code(" not in prompt.user
    assert "compiler_analysis(" not in prompt.user
    assert "benchmark_code(code: string" in prompt.user


def test_no_tools_says_so(region: Region) -> None:
    assert make(region, []).user.endswith("Tools you may call:\n\nnone in this session.\n")


def test_an_unknown_tool_is_refused(region: Region) -> None:
    with pytest.raises(PromptError, match="run_shell"):
        make(region, ["run_shell"])


def test_the_system_prompt_states_goal_constraints_platform_and_answer(region: Region) -> None:
    system = make(region).system
    assert "Platform: NVIDIA H200; the file is compiled for sm_90." in system
    assert "Edit only the region" in system
    assert "signatures" in system
    for banned in ("streams", "threads", "CUDA graphs", "timers", "library calls"):
        assert banned in system
    assert f"exactly one JSON object:\n{ANSWER_FORMAT}\n" in system
    for key in FinalAnswer.model_fields:  # every key the answer parser reads is explained
        assert f"{key} " in system.split(ANSWER_FORMAT)[1]
    assert "<tool_call>" in system


def test_nothing_is_left_unfilled(region: Region) -> None:
    prompt = make(region)
    for text in (prompt.system, prompt.user):
        assert not re.search(r"\$[A-Za-z_{]", text.replace(region.text, ""))


def test_a_region_outside_the_root_is_refused(region: Region, tmp_path: Path) -> None:
    with pytest.raises(PromptError, match="outside the project root"):
        build(
            region,
            project_root=tmp_path,
            baseline_ms=None,
            gpu="NVIDIA H200",
            compile_target="sm_90",
            tools=[],
        )


def test_the_platform_must_be_named(region: Region) -> None:
    with pytest.raises(PromptError, match="GPU"):
        build(
            region,
            project_root=FIXTURE,
            baseline_ms=None,
            gpu=" ",
            compile_target="sm_90",
            tools=[],
        )


def test_backticks_in_the_region_lengthen_the_fence(region: Region) -> None:
    text = 'const char* s = "```";  // a ```` run\n'
    user = make(dataclasses.replace(region, text=text)).user
    assert f"`````cuda\n{text}`````" in user
    assert fenced("x") == "```cuda\nx\n```"
