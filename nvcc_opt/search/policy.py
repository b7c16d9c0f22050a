"""`--model search`: a model-free policy behind the same model interface as a language model.

It reads the prompt, calls the same tools through the same loop (so its traces have the same
format and can seed training), and chooses each next step from what the tools said:
1. compiler_analysis of the region as it is (registers, spills, whether they limit occupancy;
   its duration is the cost of one compile: from 10 s on, the translation unit is large), then
   profile_kernel when offered (memory-, compute- or latency-bound, stall reasons);
2. `search` for the launches of the region's kernels and the constants they use (block sizes,
   and whether a launch passes one pointer twice);
3. benchmark_code of each source transform and build flag alone, in the order the measurements
   set (`priorities.py`: each change carries the fact that ranked it); a kernel-only change
   whose machine code (compiler_analysis's SASS digests) equals the region's, or a change
   already timed, is not timed again; fast math is timed without reading its SASS first, and so
   is a flag on a large translation unit until a timing is seen to cost at least twice a compile
   (then reading the machine code first is the cheaper way to drop a flag that changes nothing);
   -maxrregcount is not tried where every kernel declares `__launch_bounds__` (ptxas ignores it
   there: the bounds' minimum blocks are tuned instead, `min_blocks.py`); a candidate that
   would not finish within the time left (one compile plus the longest timing so far) is not
   started, and the answer names it;
4. greedy combination of what improved, best first, keeping a change only when it adds; once two
   changes have improved, the changes alone stop while the time or calls left would not cover
   one more and a combination (the longest benchmark_code call so far is the estimate), so the
   budget's end never falls between two improvements and their combination; a combination whose
   code equals a change already timed alone is not timed again;
5. a final answer whose explanation names each change and its measured effect; when nothing
   helped, the region unchanged (which `optimize` records as "original kept" without verifying).
All within a time budget and a number of tool calls below the loop's turn limit.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any
from urllib.parse import parse_qsl

from nvcc_opt.agent.model import ModelError, Reply, ToolCall
from nvcc_opt.search.changes import Change, compose, flag_changes, transform_changes
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.explain import effect, explain
from nvcc_opt.search.find_facts import gather
from nvcc_opt.search.observe import (
    Analysis,
    Profile,
    PromptUnreadable,
    read_analysis,
    read_profile,
    read_task,
)
from nvcc_opt.search.priorities import ordered
from nvcc_opt.search.steps import Call, Final, Plan, Step
from nvcc_opt.search.transforms import BY_NAME, Facts
from nvcc_opt.tools.bench import Measured, read_benchmark

BUDGET_S = 180.0  # exploration; with the baseline, builds and the final verification (about a
# minute on the H200) a kernel stays within the suite target of 5 minutes
MAX_CALLS = 40  # tool calls; `optimize` gives the policy this many turns and one for the answer
MIN_GAIN = 1.01  # a change joins the combination only if it adds at least this
LARGE_BUILD_S = 10.0  # a compile of the region's file this long makes its translation unit large


Built = tuple[str, tuple[str, ...]]  # a region's code and compile_args, as a dictionary key


class SearchPolicy:
    """The policy as a `Model`: each `complete` returns the next tool call or the final answer."""

    def __init__(
        self,
        budget_s: float = BUDGET_S,
        max_calls: int = MAX_CALLS,
        clock: Callable[[], float] = time.monotonic,
        only: frozenset[str] = frozenset(),
    ) -> None:
        self.name = "search"
        self.budget_s, self.max_calls, self.clock = budget_s, max_calls, clock
        self.only = only  # change names to try (empty: every change that applies)
        self.turns_needed = max_calls + 1  # every call, then the final answer
        self._plan: Plan | None = None
        self._calls = 0

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        try:
            if self._plan is None:
                task = read_task(messages)
                offered = {t["function"]["name"] for t in tools if "function" in t}
                budget = Budget(self.clock, self.clock() + self.budget_s, self._calls_left)
                self._plan = _search(task.region, task.target, offered, budget, self.only)
                step = next(self._plan)
            else:
                last = messages[-1] if messages else {}
                step = self._plan.send(str(last.get("content", "")))
        except PromptUnreadable as exc:
            raise ModelError(f"the search policy cannot read this prompt: {exc}") from exc
        except StopIteration:
            raise ModelError("the search policy has nothing more to do") from None
        return self._reply(step)

    def _calls_left(self) -> int:
        return self.max_calls - self._calls

    def _reply(self, step: Step) -> Reply:
        if isinstance(step, Final):
            answer: dict[str, Any] = {"final_code": step.code, "explanation": step.explanation}
            if step.compile_args:
                answer["compile_args"] = list(step.compile_args)
            return Reply(text=json.dumps(answer))
        self._calls += 1
        call = ToolCall(f"search-{self._calls}", step.name, json.dumps(step.arguments))
        return Reply(text=step.why, tool_calls=(call,))


def from_spec(rest: str) -> SearchPolicy:
    """`search[?budget_s=S&max_calls=N&only=NAME,NAME]`; `only` names the changes to try (a
    source transform's name, fast_math, ptxas_O3, vectorize, sm_XXa, maxrregcountN)."""
    options = dict(parse_qsl(rest.lstrip("?"), strict_parsing=False)) if rest else {}
    unknown = set(options) - {"budget_s", "max_calls", "only"}
    if unknown:
        raise ValueError(
            f"unknown search option(s) {sorted(unknown)}; use budget_s, max_calls, only"
        )
    only = frozenset(n.strip() for n in options.get("only", "").split(",") if n.strip())
    bad = sorted(n for n in only if not _change_name(n))
    if bad:
        known = ", ".join(sorted(BY_NAME) + ["fast_math", "ptxas_O3", "vectorize"])
        raise ValueError(f"only: unknown change(s) {bad}; use {known}, sm_XXa or maxrregcountN")
    try:
        return SearchPolicy(
            budget_s=float(options.get("budget_s", BUDGET_S)),
            max_calls=int(options.get("max_calls", MAX_CALLS)),
            only=only,
        )
    except ValueError as exc:
        raise ValueError(f"search options must be numbers: {exc}") from None


def _change_name(name: str) -> bool:
    """Whether `name` can name a change (changes.py, transforms.py)."""
    if name in BY_NAME or name in ("fast_math", "ptxas_O3", "vectorize"):
        return True
    return re.fullmatch(r"sm_\d+a|maxrregcount\d+", name) is not None


@dataclass(frozen=True)
class Budget:
    """What is left of the policy's exploration time and tool calls."""

    clock: Callable[[], float]
    deadline: float
    calls_left: Callable[[], int]

    def seconds_left(self) -> float:
        return self.deadline - self.clock()

    def room(self) -> bool:
        return self.seconds_left() > 0 and self.calls_left() > 0

    def keeps_for_combining(self, longest_s: float) -> bool:
        """Whether one more change alone (an analysis and a benchmark_code call of about
        `longest_s`) would leave no room to combine what already helped."""
        return self.seconds_left() < longest_s or self.calls_left() < 3


def _search(
    code: str, target: str, offered: set[str], budget: Budget, only: frozenset[str] = frozenset()
) -> Plan:
    room = budget.room
    if "benchmark_code" not in offered:
        yield Final(code, "benchmark_code was not offered, so nothing could be measured.")
        return
    analysis: Analysis | None = None
    build_s = 0.0  # one compile of the region's file, from the first compiler_analysis call
    if "compiler_analysis" in offered:
        started = budget.clock()
        seen = yield Call("compiler_analysis", {}, "Reading registers and occupancy first.")
        build_s = budget.clock() - started
        analysis = read_analysis(seen)
    profile: Profile | None = None
    if "profile_kernel" in offered and room():
        why = "Measuring what bounds the kernel (memory, compute or latency) and why it stalls."
        profile = read_profile((yield Call("profile_kernel", {}, why)))
    given = dict(analysis.defines) if analysis is not None else {}
    facts = _run_block(code, (yield from gather(code, offered, room, given)), profile)
    kernels = Source(code).kernels()
    bounded = bool(kernels) and all(k.launch_bounds for k in kernels)
    found = transform_changes(code, facts) + flag_changes(target, analysis, bounded)
    singles = ordered(found, code, analysis, profile)
    notes: list[str] = []
    if only:
        skipped = [c.name for c in singles if c.name not in only]
        singles = [c for c in singles if c.name in only]
        missing = sorted(only - {c.name for c in singles})
        if skipped:
            notes.append(f"not tried (only={','.join(sorted(only))}): {', '.join(skipped)}")
        if missing:
            notes.append(f"asked for but not applicable to this region: {', '.join(missing)}")
    large = build_s >= LARGE_BUILD_S
    alone: dict[str, tuple[Change, Measured]] = {}
    untimed: list[str] = []
    timed_as: dict[tuple[tuple[str, str, str], ...], Change] = {}
    timed_code: dict[Built, Change] = {}  # what each change alone sent to benchmark_code
    region_code = analysis.machine_code if analysis is not None else ()
    longest_s = 0.0  # the longest benchmark_code call so far
    unread: list[str] = []  # flags timed on a large unit without reading their machine code
    tried: list[Change] = []
    for at, change in enumerate(singles):
        left = ", ".join(c.what for c in singles[at:])
        if not room():
            notes.append(f"not reached within the budget (time or tool calls): {left}")
            break
        if (
            longest_s
            and budget.keeps_for_combining(longest_s)
            and _combinable(code, facts, alone, timed_code)
        ):
            notes.append(f"not tried alone, to leave time to combine what helped: {left}")
            break
        read_sass = bool(region_code) and _sass_tells(change, large, longest_s >= 2 * build_s)
        if large and not read_sass and change.transform is None and not change.numerics:
            unread.append(change.what)
        cost = (build_s if read_sass else 0.0) + max(longest_s, build_s)
        if cost and budget.seconds_left() < cost:
            notes.append(
                f"not reached within the budget ({budget.seconds_left():.0f} s left, one "
                f"candidate about {cost:.0f} s): {left}"
            )
            break
        built = compose(code, facts, [change])
        if built is None:
            continue
        tried.append(change)
        machine: tuple[tuple[str, str, str], ...] = ()
        if read_sass:
            why = f"Checking whether {change.what} changes the machine code."
            machine = read_analysis((yield _analyse(built, why))).machine_code
            twin = "the region" if machine == region_code else None
            if machine in timed_as:
                twin = timed_as[machine].what
            if twin is not None:
                untimed.append(f"{change.what}: the same machine code as {twin}; not timed")
                continue
            if not room():
                notes.append(f"not reached within the budget (time or tool calls): {left}")
                break
        started = budget.clock()
        measured = read_benchmark((yield _bench(built, f"Trying {change.what} alone.")))
        longest_s = max(longest_s, budget.clock() - started)
        alone[change.name] = (change, measured)
        timed_code[_key(built)] = change
        if machine:
            timed_as[machine] = change
        if measured.verdict == "error" and "no GPU here" in measured.why:
            break  # nothing can be timed on this machine
    if unread:
        notes.append(
            f"a large translation unit (one compile {build_s:.0f} s): timed without reading "
            f"their machine code first, before a timing was seen to cost more: {', '.join(unread)}"
        )
    helped = _helped(alone)
    kept: list[Change] = []
    best = 1.0
    if helped:
        kept, best = [helped[0][0]], helped[0][1].speedup
        for change, _ in helped[1:]:
            built = compose(code, facts, [*kept, change])
            if built is None:
                continue
            same = timed_code.get(_key(built))
            if same is not None:  # one change holds the other (restrict on all holds const's)
                notes.append(f"adding {change.what}: the same code as {same.what} alone")
                continue
            if not room():
                notes.append(f"{change.what}: not combined (out of time or tool calls)")
                break
            what = " + ".join(c.name for c in [*kept, change])
            measured = read_benchmark((yield _bench(built, f"Combining {what}.")))
            if measured.improved and measured.speedup >= best * MIN_GAIN:
                kept, best = [*kept, change], measured.speedup
                notes.append(f"adding {change.what}: {measured.speedup:.3f}x together")
            else:
                notes.append(f"adding {change.what}: no gain together ({effect(measured)})")
    notes += untimed
    final = compose(code, facts, kept) if kept else None
    if final is None:
        yield Final(code, explain([], alone, notes, 1.0, tried))
        return
    new_code, flags = final
    yield Final(new_code, explain(kept, alone, notes, best, tried), tuple(flags))


def _run_block(code: str, facts: Facts, profile: Profile | None) -> Facts:
    """The block size the profiled run launched, for a kernel of the region whose launches the
    source does not tell (a run-time block size): what launch_bounds and the block shapes need."""
    if profile is None or profile.block is None or profile.kernel in facts.block_sizes:
        return facts
    if profile.kernel not in {k.name for k in Source(code).kernels()}:
        return facts
    return replace(facts, block_sizes={**facts.block_sizes, profile.kernel: profile.block})


def _sass_tells(change: Change, large: bool, timing_dearer: bool) -> bool:
    """Whether reading the change's machine code first can save its timing: not for launches
    (host code), not for flags that change results (the checks, under timing, tell whether
    they pass), and not for flags on a large translation unit while a timing is not known to
    cost at least twice a compile (`timing_dearer`): there a compile costs nearly what a timing
    does, while a long run (a real application) makes the compile the cheaper check."""
    if _host_side(change) or change.numerics:
        return False
    return not (large and change.transform is None and not timing_dearer)


def _helped(alone: dict[str, tuple[Change, Measured]]) -> list[tuple[Change, Measured]]:
    """The changes that improved alone, best first."""
    return sorted((p for p in alone.values() if p[1].improved), key=lambda p: -p[1].speedup)


def _combinable(
    code: str,
    facts: Facts,
    alone: dict[str, tuple[Change, Measured]],
    timed_code: dict[Built, Change],
) -> bool:
    """Whether the best change that helped composes with another that helped into code not
    timed yet."""
    helped = _helped(alone)
    for change, _ in helped[1:]:
        built = compose(code, facts, [helped[0][0], change])
        if built is not None and _key(built) not in timed_code:
            return True
    return False


def _key(built: tuple[str, list[str]]) -> Built:
    return built[0], tuple(built[1])


def _host_side(change: Change) -> bool:
    """Whether the change touches host code (launches): equal SASS does not make it a no-op."""
    return change.transform is not None and BY_NAME[change.transform].host_side


def _arguments(built: tuple[str, list[str]]) -> dict[str, Any]:
    code, flags = built
    return {"code": code, "compile_args": flags} if flags else {"code": code}


def _bench(built: tuple[str, list[str]], why: str) -> Call:
    return Call("benchmark_code", _arguments(built), why)


def _analyse(built: tuple[str, list[str]], why: str) -> Call:
    return Call("compiler_analysis", _arguments(built), why)
