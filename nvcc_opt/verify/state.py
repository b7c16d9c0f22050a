"""The runtime state check of the final verification: state kept across calls, caught by running.

Applications run the same inputs hundreds of times and check the last output, so a candidate that
computes once and then skips (or shortens) later calls passes every check of a normal run, and
fresh inputs or the sanitizer start a new process in which it computes again. No reading of the
source can close this: the memory may be a static, a note in the caller's own buffers, a tag in
the low bits of the output, a device setting read back. So the check runs the real application
with nvcc-opt's channel (runtime/channel.cpp) in it, three times:

1. the baseline, "record": the region's first `[verify] state_calls` calls are watched. A call is
   one launch of the region's kernels when the region holds kernels only, else the launches of
   its kernels between two launches of other kernels. After each, every allocation the region's
   arguments reach is copied out; before each call but the first, every float, double, half and
   bfloat16 element of them is changed (x -> x * (1 + u/8), u in [0.5, 1) from a sequence salted
   per check, rounded to nearest: runtime/elements.h): inputs, outputs and scratch alike, so
   nothing an earlier call left is still right.
   Allocations are matched between processes by the order the program made them (addresses
   differ from run to run).
   Small tables the original only reads (64 KiB at most: coefficients, weights) keep their
   values: an honest rewrite may hold them as constants, and fresh inputs check that.
2. the baseline again, "compare": what differs between two runs of the original (atomics, thread
   order) is the program's own noise, not the candidate's.
3. the candidate, "compare", with the same changes at the same calls: its copies must match the
   record's element by element (`[verify] state_rtol` against the larger of the element and the
   buffer's RMS, for floating point, never under 2^-9 for a half or 2^-6 for a bfloat16 (a few
   units in the last place); bit for bit otherwise), allocations the original leaves as they
   are must stay as they are bit for bit (a note written into an input), it must make as many
   calls, reach no memory the original does not, and its program output under the changed
   inputs must be the original's.
A buffer the original writes in a call and the candidate leaves alone counts as scratch the
candidate no longer needs (a fused kernel's intermediate) only where it never writes it in any
compared call and the program's output still agrees; otherwise it is the output of a skipped call
(a program that prints only PASS or FAIL prints FAIL under the changes whatever the region
computes: a candidate that writes its output in call 1 only passed as scratch there). Where
two runs of the original print different results under the changes, the output vouches for
nothing: such a buffer is an `unmeasured:` caveat.

The channel also times each call on the GPU. Calls after the last change repeat their inputs: a
candidate whose calls get much faster when nothing changed, where the original's do not, keeps
results across calls even if it recomputes whenever it notices a change (verify/repeat_times.py).
And the runs' calls go on from inputs the candidate has never seen (the changes are salted per
check): verify/changed_inputs.py compares their speedup with the timed runs' once those are done.
"""

from __future__ import annotations

import secrets
import shutil
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from nvcc_opt.config import ProjectConfig
from nvcc_opt.runtime import report
from nvcc_opt.verify.changed_inputs import StateTimes
from nvcc_opt.verify.kernels import RegionKernels
from nvcc_opt.verify.measure import Attach, Build, Run, observed_run, same_output
from nvcc_opt.verify.repeat_times import repeat_reasons
from nvcc_opt.workspace.runner import Runner

COPY_CAP = 256 << 20  # bytes of each allocation compared per call


@dataclass(frozen=True)
class StateRuns:
    """The three runs of the check, each with its output and the process that ran the region."""

    record: Run
    again: Run
    candidate: Run


def state_check(
    config: ProjectConfig,
    runner: Runner,
    baseline: Build,
    candidate: Build,
    gpu: str,
    library: Path,
    kernels: RegionKernels,
    notes: list[str],
    keep: list[StateTimes] | None = None,
) -> list[str]:
    """Rejection reasons (`state: ...`); what could not be checked goes to `notes`; the runs'
    region GPU times are appended to `keep` (verify/changed_inputs.py reads them once the
    timed runs are done)."""
    folder = Path(tempfile.mkdtemp(prefix="nvcc-opt-state-"))
    try:
        data = folder / "record"
        data.mkdir()
        settings = _settings(config, kernels, data)
        record_file = folder / "record.cfg"
        record_file.write_text(_config("record", kernels.original, settings), encoding="utf-8")
        # the record run writes the copies: its data folder is writable, nothing else is
        writer = replace(baseline, writable=(*baseline.writable, data))
        record = observed_run(config, runner, writer, gpu, (), Attach(library, record_file))
        recorded = _region_state(record)
        if recorded is None:
            notes.append(_not_run(record))
            return []
        compare_a = folder / "again.cfg"
        compare_a.write_text(
            _config("compare", kernels.original, settings, recorded), encoding="utf-8"
        )
        again = observed_run(config, runner, baseline, gpu, (), Attach(library, compare_a))
        compare_b = folder / "candidate.cfg"
        compare_b.write_text(
            _config("compare", kernels.candidate, settings, recorded), encoding="utf-8"
        )
        cand = observed_run(config, runner, candidate, gpu, (), Attach(library, compare_b))
        runs = StateRuns(record, again, cand)
        if keep is not None:
            keep += [t for t in (state_times(runs, kernels),) if t is not None]
        return state_reasons(config, runs, notes)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def state_times(runs: StateRuns, kernels: RegionKernels) -> StateTimes | None:
    """The region's GPU time in each of the three whole runs, for verify/changed_inputs.py;
    None unless each reported its region completely and the original's runs had no problem."""
    states = [_region_state(r) for r in (runs.record, runs.again, runs.candidate)]
    reports = [r.observed.channel for r in (runs.record, runs.again, runs.candidate)]
    record, again, cand = states
    if record is None or again is None or cand is None or again.problems:
        return None
    if any(r is None or not r.complete for r in reports):
        return None
    names = (kernels.original, kernels.original, kernels.candidate)
    a, b, c = (r.gpu_ns(k) for r, k in zip(reports, names, strict=True) if r)
    return StateTimes(a, b, c, record.calls, _changes_data(record))


CHANGED_TYPES = ("float", "double", "half", "bfloat16")  # the elements the channel changes
SMALL_TABLE = 64 << 10  # channel.cpp's kSmallTable: read-only allocations this small keep values


def _changes_data(record: report.State) -> bool:
    """Whether the check changed anything the region reaches, as the channel decides: elements of
    CHANGED_TYPES, after each recorded call but the last, unless the allocation is a small table
    that call only read (its digest unchanged)."""
    calls = sorted({call for call, _ in record.digests})[:-1]
    for allocation in record.allocations:
        if allocation.type not in CHANGED_TYPES:
            continue
        for call in calls:
            digest = record.digests.get((call, allocation.index))
            read_only = digest is not None and digest[0] == digest[1]
            if not (allocation.size <= SMALL_TABLE and read_only):
                return True
    return False


def _settings(config: ProjectConfig, kernels: RegionKernels, data: Path) -> list[str]:
    return [
        # the same changes in the three runs of one check, never the same in two checks: a
        # candidate cannot know the changed inputs in advance (verify/changed_inputs.py)
        f"salt {secrets.randbits(32)}",
        f"each_launch_a_call {int(kernels.each_launch_a_call)}",
        f"calls {config.verify.state_calls}",
        f"copy_cap {COPY_CAP}",
        f"rtol {config.verify.state_rtol!r}",
        f"data {data}",
    ]


def _config(
    role: str,
    names: frozenset[str],
    settings: list[str],
    recorded: report.State | None = None,
) -> str:
    lines = [f"role {role}", *(f"kernel {n}" for n in sorted(names)), *settings]
    if recorded is not None:
        lines += [
            f"allocation {a.ordinal} {a.base} {a.size} {a.type}" for a in recorded.allocations
        ]
        lines += [
            f"digest {call} {index} {before} {after}"
            for (call, index), (before, after) in sorted(recorded.digests.items())
        ]
    return "\n".join(lines) + "\n"


def _region_state(run: Run) -> report.State | None:
    """The state report of the one process that ran the region, if exactly one did."""
    channel = run.observed.channel
    states = channel.states if channel is not None else ()
    return states[0] if len(states) == 1 else None


def _not_run(record: Run) -> str:
    return f"unmeasured: the runtime state check did not run ({_why_no_state(record)})"


def _why_no_state(run: Run) -> str:
    channel = run.observed.channel
    if channel is None or not channel.processes:
        return "the channel wrote nothing: no CUDA process, or the channel could not load"
    if len(channel.states) > 1:
        return f"{len(channel.states)} processes ran the region; the check follows one"
    return "the region's kernels never ran under it" + "".join(f"; {n}" for n in channel.notes)


def state_reasons(config: ProjectConfig, runs: StateRuns, notes: list[str]) -> list[str]:
    """The rules of the module docstring, on the three runs' channel reports and outputs."""
    record = _region_state(runs.record)
    again = _region_state(runs.again)
    cand = _region_state(runs.candidate)
    if record is None or again is None:
        notes.append("unmeasured: the runtime state check's baseline runs did not complete")
        return []
    if cand is None:
        return [
            "state: the candidate's run did not report its region's calls "
            f"({_why_no_state(runs.candidate)})"
        ]
    if again.problems:  # the check itself failed on the original: it vouches for nothing
        notes.append(
            f"unmeasured: the runtime state check failed on the original ({again.problems[0]})"
        )
        return []
    if not _changes_data(record):
        notes.append(
            "state check: the region's arguments reach no float, double, half or bfloat16 "
            "data (through pointer parameters of those types) but small read-only tables, the "
            "only kinds it changes between calls (integer and struct data are left as they "
            "are), so results kept "
            "from one call to the next are caught only by their times: calls after the first "
            "may not get much faster than the original's do"
        )
    reasons = _call_reasons(record, cand)
    if _complete(runs.record) and _complete(runs.again) and not _complete(runs.candidate):
        # as in the timed runs (verify/corroborate.py): without every GPU record, neither the
        # late calls' times nor the speedup on changed inputs (changed_inputs.py) are measured
        reasons.append(
            "state: the candidate's run ended without nvcc-opt's complete channel report, where "
            "the original's did (the process did not exit normally)"
        )
    elif not (_complete(runs.record) and _complete(runs.again)):  # nothing measured them: say so
        notes.append(
            "unmeasured: the runtime state check's runs of the original ended without nvcc-opt's "
            "complete channel report, so the calls after the last change and the speedup on "
            "changed inputs were not measured"
        )
    reasons += [f"state: {p}" for p in cand.problems]
    described = {a.index: _describe(a) for a in record.allocations}
    touched_again = set(again.touched)
    reasons += [
        f"state: call {call} changed {described.get(index, f'allocation {index}')}, which the "
        "original leaves as it was (a note kept in the caller's memory)"
        for call, index in cand.touched
        if (call, index) not in touched_again
    ]
    program = same_output(config, runs.candidate.output, runs.record.output)
    # The original's own two runs must agree for the output to vouch either way (a result that
    # overflows under the changes, run-to-run noise): then nothing is said of it, and a buffer
    # left unwritten is no proven scratch (a stale output would pass as one).
    vouches = same_output(config, runs.again.output, runs.record.output).ok
    noise = {(c.call, c.index): c.differing for c in again.compares}
    written = {c.index for c in cand.compares if not c.unwritten}  # scratch is never written
    scratch = []
    for c in cand.compares:
        allowed = 4 * noise.get((c.call, c.index), 0)
        allowed += 16 if allowed else 0
        if c.differing <= allowed:
            continue
        if c.unwritten and c.index not in written and (program.ok or not vouches):
            scratch.append(described.get(c.index, f"allocation {c.index}"))
            continue
        reasons.append(_differs(c, described, config.verify.state_calls))
    if vouches and not program.ok:
        reasons.append(
            "state: with inputs changed between calls, the program's own output differs from "
            "the original's: " + "; ".join(program.reasons[:3])
        )
    left = ", ".join(sorted(set(scratch)))
    if scratch and not reasons and vouches:
        notes.append(
            f"state: the candidate no longer writes {left} (scratch, since the program's output "
            "is unchanged)"
        )
    elif scratch and not reasons:
        notes.append(
            f"unmeasured: the candidate leaves {left} as it was after calls the original writes "
            "it in, and the program's own output cannot tell scratch from a skipped call: two "
            "runs of the original print different results under the changed inputs"
        )
    complete = all(_complete(r) for r in (runs.record, runs.again, runs.candidate))
    reasons += repeat_reasons(
        record, again, cand, config.verify.state_calls, complete, notes, _changes_data(record)
    )
    return reasons


def _call_reasons(record: report.State, cand: report.State) -> list[str]:
    if cand.calls == record.calls:
        return []
    return [
        f"state: the candidate's region ran {cand.calls} calls where the original's ran "
        f"{record.calls} (calls skipped)"
    ]


def _describe(allocation: report.Allocation) -> str:
    size = _size(allocation.size)
    seen = f", first reached by {allocation.seen}" if allocation.seen else ""
    return f"allocation a{allocation.index} ({size} of {allocation.type}{seen})"


def _size(n: int) -> str:
    for unit, scale in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.3g} {unit}"
    return f"{n} B"


def _differs(c: report.Compare, described: dict[int, str], changed_until: int) -> str:
    when = "its inputs changed since the last call" if 1 < c.call <= changed_until else "call 1"
    what = described.get(c.index, f"allocation {c.index}")
    skipped = " (left as it was: the call skipped its work)" if c.unwritten else ""
    return (
        f"state: after call {c.call} ({when}), {what} differs from the original's at "
        f"{c.differing} of {c.elements} elements, first [{c.first}]: {c.expected:.9g} expected, "
        f"{c.got:.9g} found{skipped}"
    )


def _complete(run: Run) -> bool:
    """Whether the run's channel saw its processes end with every GPU record delivered."""
    channel = run.observed.channel
    return channel is not None and channel.complete
