"""What the search policy reads: the prompt it was given, compiler_analysis's report and
profile_kernel's summary, in the formats nvcc-opt's own prompt template and tools write (tests
pin both sides). benchmark_code's observation is read by `tools.bench.read_benchmark`, beside the
function that writes it."""

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
    spill_bytes: int = 0  # the most spill stores of any kernel
    occupancy_pct: int | None = None  # the lowest theoretical occupancy shown
    defines: tuple[tuple[str, str], ...] = ()  # command-line macros the region uses (name, value)


@dataclass(frozen=True)
class Profile:
    """profile_kernel's summary of the region's kernel that takes the longest per launch."""

    kernel: str
    bound: str | None  # "memory", "compute" or "latency", as the tool's hint says
    dram_pct: float | None
    sm_pct: float | None
    achieved_pct: float | None  # achieved occupancy
    limiter: str | None  # the resource that sets the blocks per SM ("registers", "warps", ...)
    stalls: tuple[tuple[str, float], ...]  # (reason, share of a warp's cycles), largest first
    block: int | None  # the block size the run launched


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


_SPILLS = re.compile(r"spill stores (\d+) B")
_OCCUPANCY = re.compile(r"\((\d+)% occupancy\)")
# an occupancy line whose limit includes registers, below full occupancy (at 100% registers may
# tie with the threads per SM as what "sets" the limit, yet fewer registers would add no warp)
_REGISTER_LIMIT = re.compile(r"\((\d+)% occupancy\), limited by [^\n]*\bregisters\b")
_REGISTER_CEILING = "limited by registers at any block size"


_MACROS = re.compile(
    r"^macros the build's command line defines, used in the region's file: (.*)$", re.M
)


def read_analysis(observation: str) -> Analysis:
    counts = [int(n) for n in _REGISTERS.findall(observation)]
    macros = _MACROS.search(observation)
    pairs = [p.partition("=") for p in macros.group(1).split(", ")] if macros else []
    spills = [int(n) for n in _SPILLS.findall(observation)]
    occupancy = [int(n) for n in _OCCUPANCY.findall(observation)]
    return Analysis(
        max(counts) if counts else None,
        _REGISTER_CEILING in observation
        or any(int(pct) < 100 for pct in _REGISTER_LIMIT.findall(observation)),
        tuple(sorted(_DIGEST.findall(observation))),
        max(spills) if spills else 0,
        min(occupancy) if occupancy else None,
        tuple((name, value) for name, equals, value in pairs if equals),
    )


_KERNEL = re.compile(r"^kernel (\S+): \d+ launch", re.MULTILINE)
_TIME = re.compile(r"^\s+time: ([\d.]+) (ns|us|ms) per launch", re.MULTILINE)
_UNIT = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3}
_HINT = re.compile(r"^\s+hint: (memory|compute|latency)-bound", re.MULTILINE)
_LATENCY = re.compile(r"^\s+hint: .*latency-bound", re.MULTILINE)
_DRAM = re.compile(r"DRAM ([\d.]+)% of peak")
_SM = re.compile(r"SM throughput ([\d.]+)% of peak")
_ACHIEVED = re.compile(r"achieved occupancy ([\d.]+)%")
_LIMITER = re.compile(r": (\w[\w ]*?) (?:and \w[\w ]*? )?set the limit")
_STALLS = re.compile(r"top stall reasons: ([^(]+)\(")
_BLOCK = re.compile(r"x block (\d+)")


def read_profile(observation: str) -> Profile | None:
    """The profile of the kernel with the longest time per launch; None when the observation
    holds no kernel profile (an error, ncu missing, nothing launched)."""
    found: list[tuple[float, Profile]] = []
    starts = [m.start() for m in _KERNEL.finditer(observation)]
    for at, end in zip(starts, [*starts[1:], len(observation)], strict=False):
        part = observation[at:end]
        name = _KERNEL.match(part)
        if name is None:
            continue
        time = _TIME.search(part)
        seconds = float(time.group(1)) * _UNIT[time.group(2)] if time else 0.0
        hint = _HINT.search(part)
        bound = hint.group(1) if hint else ("latency" if _LATENCY.search(part) else None)
        stalls = _STALLS.search(part)
        pairs = [w.strip().rsplit(" ", 1) for w in stalls.group(1).split(",")] if stalls else []
        found.append(
            (
                seconds,
                Profile(
                    kernel=name.group(1),
                    bound=bound,
                    dram_pct=_number(_DRAM, part),
                    sm_pct=_number(_SM, part),
                    achieved_pct=_number(_ACHIEVED, part),
                    limiter=(m.group(1) if (m := _LIMITER.search(part)) else None),
                    stalls=tuple(
                        (r.strip(), float(s.strip().rstrip("%")) / 100)
                        for r, s in (p for p in pairs if len(p) == 2)
                    ),
                    block=int(b.group(1)) if (b := _BLOCK.search(part)) else None,
                ),
            )
        )
    return max(found, key=lambda pair: pair[0])[1] if found else None


def _number(pattern: re.Pattern[str], text: str) -> float | None:
    match = pattern.search(text)
    return float(match.group(1)) if match else None
