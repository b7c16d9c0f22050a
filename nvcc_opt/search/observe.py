"""What the search policy reads: the prompt it was given and compiler_analysis's report, in the
formats nvcc-opt's own prompt template and tool write (tests pin both sides). benchmark_code's
observation is read by `tools.bench.read_benchmark`, beside the function that writes it."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


class PromptUnreadable(ValueError):
    """The messages do not hold an nvcc-opt optimization prompt."""


@dataclass(frozen=True)
class Task:
    region: str  # the region's exact text
    target: str  # what the file is compiled for, e.g. "sm_90"


@dataclass(frozen=True)
class Analysis:
    registers: int | None  # the most any kernel of the region uses
    register_limited: bool  # occupancy limited by registers somewhere
    machine_code: tuple[tuple[str, str, str], ...] = ()  # (kernel, arch, SASS digest), sorted


_TARGET = re.compile(r"the file is compiled for (.+?)\.\s*$", re.MULTILINE)


def read_task(messages: list[dict[str, Any]]) -> Task:
    system = next((m["content"] for m in messages if m.get("role") == "system"), "")
    user = next((m["content"] for m in messages if m.get("role") == "user"), "")
    target = _TARGET.search(system or "")
    marker = "Its exact text:\n"
    if marker not in (user or ""):
        raise PromptUnreadable("the first user message does not show the region's exact text")
    after = user.split(marker, 1)[1]
    fence, _, rest = after.partition("\n")
    ticks = fence[: len(fence) - len(fence.lstrip("`"))]
    if len(ticks) < 3:
        raise PromptUnreadable("the region's text is not in a fenced code block")
    end = rest.find("\n" + ticks + "\n")
    if end == -1:
        end = rest.rfind("\n" + ticks)
    if end == -1:
        raise PromptUnreadable("the region's code block is not closed")
    return Task(region=rest[: end + 1], target=target.group(1).strip() if target else "unknown")


_REGISTERS = re.compile(r"^\s*sm_\w+: registers (\d+),", re.MULTILINE)


_DIGEST = re.compile(
    r"^SASS of (\S+) \((\w+), [^)]*\): \d+ instructions, digest (\S+)$", re.MULTILINE
)


def read_analysis(observation: str) -> Analysis:
    counts = [int(n) for n in _REGISTERS.findall(observation)]
    return Analysis(
        max(counts) if counts else None,
        "limited by registers" in observation,
        tuple(sorted(_DIGEST.findall(observation))),
    )
