"""The prompts of an optimization session (the paper's section V-A): the region, the platform
and the offered tools, from `prompts/system.txt` and `prompts/user.txt` (rendered strictly by
`agent.prompt.render_template`), and which tools a session offers."""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.agent.answer import ANSWER_FORMAT
from nvcc_opt.agent.prompt import PromptError, fenced, render_template
from nvcc_opt.tools.catalog import ALL_TOOL_NAMES, TOOL_NAMES, declarations
from nvcc_opt.tools.region import Region

ALWAYS_OFFERED = "benchmark_code"  # training parity: every rollout is offered it
PARITY_COUNTS = (4, 6)  # training parity: how many tools a rollout is offered, inclusive

_KINDS = {
    "function": "a function definition",
    "block": "the lines between `// @optimize begin` and `// @optimize end`",
}


@dataclass(frozen=True)
class Prompt:
    system: str
    user: str
    tools: list[str]  # the offered tools, in the catalog's order


def render(template_name: str, **values: str) -> str:
    """`nvcc_opt/tools/prompts/<template_name>.txt` with every placeholder filled from `values`."""
    return render_template("nvcc_opt.tools", template_name, values)


def choose_tools(requested: Sequence[str] | None, *, parity: bool, rng: random.Random) -> list[str]:
    """The tools to offer, in the catalog's order: `requested` (e.g. from `--tools`), or with
    `parity` 4 to 6 of the paper's six drawn at random with benchmark_code always among them,
    else the paper's six. Optional tools (profile_kernel) come only when requested."""
    if requested is not None and parity:
        raise PromptError("choose either a tool subset or training-parity mode, not both")
    if requested is not None:
        unknown = sorted(set(requested) - set(ALL_TOOL_NAMES))
        if unknown:
            raise PromptError(f"unknown tools {unknown}; the tools are {', '.join(ALL_TOOL_NAMES)}")
        return [name for name in ALL_TOOL_NAMES if name in requested]
    if not parity:
        return list(TOOL_NAMES)
    others = [name for name in TOOL_NAMES if name != ALWAYS_OFFERED]
    drawn = set(rng.sample(others, rng.randint(*PARITY_COUNTS) - 1))
    return [name for name in TOOL_NAMES if name == ALWAYS_OFFERED or name in drawn]


def build(
    region: Region,
    *,
    project_root: Path,
    baseline_ms: float | None,
    gpu: str,
    compile_target: str,
    tools: list[str],
) -> Prompt:
    """The system and first user message for optimizing `region` with `tools` offered.

    `gpu` names the device (e.g. "NVIDIA H200"), `compile_target` the architectures the file is
    built for (e.g. "sm_90"); `baseline_ms` is None before the baseline was measured."""
    unknown = [name for name in tools if name not in ALL_TOOL_NAMES]
    if unknown:
        raise PromptError(f"unknown tools {unknown}; the tools are {', '.join(ALL_TOOL_NAMES)}")
    if not gpu.strip() or not compile_target.strip():
        raise PromptError("the prompt needs the GPU's name and the compile target")
    system = render("system", gpu=gpu, compile_target=compile_target, answer_format=ANSWER_FORMAT)
    user = render(
        "user",
        region_name=region.name,
        region_kind=_KINDS.get(region.span.kind, region.span.kind),
        start_line=str(region.span.start_line),
        end_line=str(region.span.end_line),
        path=_relative(region.file, project_root),
        region_block=fenced(region.text),
        baseline=_baseline(baseline_ms),
        tool_catalog=declarations().prompt_text(tools) if tools else "none in this session.",
    )
    return Prompt(system, user, list(tools))


def _relative(file: Path, project_root: Path) -> str:
    # The file tools take paths relative to the root, so the prompt must use the same ones.
    try:
        return file.resolve().relative_to(project_root.resolve()).as_posix()
    except ValueError:
        raise PromptError(
            f"the region's file {file} is outside the project root {project_root}"
        ) from None


def _baseline(ms: float | None) -> str:
    if ms is None:
        return "not measured yet"
    if not math.isfinite(ms) or ms <= 0:
        raise PromptError(f"the baseline time must be a positive number of ms, not {ms}")
    shown = f"{ms:.0f}" if ms >= 1000 else f"{ms:.4g}"
    return f"{shown} ms per run of the project's run script"
