"""The independent final verification of a candidate or a stored rewrite.

Independent of what the model saw: fresh private trees configured and built from scratch, more
paired runs (`[run] final_repeats`), the full checks, inputs never shown while exploring
(`[verify] fresh_inputs`), the runtime state check (verify/state.py: the region's calls with
inputs changed between them, compared element by element with the original's; and, once timed,
the speedup on those inputs against the timed runs', verify/changed_inputs.py), and
compute-sanitizer memcheck and racecheck, on the region's kernels alone where the region is
kernels alone, in a bounded time (too slow or failing on the original too, or passed over the
first launches only: an `unmeasured:` note; missing here: an `unavailable:` note).

What could not be checked is a note, kept with the verification (`records.CAVEATS`):
`unavailable:` (this machine lacks the tool: no GPU, no compute-sanitizer, no channel),
`unmeasured:` (a check that did not complete for this run) and `uncontained:` (runs not
contained) make `review` ask for --force, as an unverified rewrite does; the last two also keep
the speedup from being credited anywhere it is counted (`records.unestablished`).
"""

from __future__ import annotations

import os
import re
import shutil
import socket
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt.config import ProjectConfig
from nvcc_opt.pool.lease import gpu_lease
from nvcc_opt.records import CompileContext, Verification
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.changed_inputs import (
    StateTimes,
    changed_input_reasons,
    changed_input_share,
)
from nvcc_opt.verify.corroborate import Observed
from nvcc_opt.verify.kernels import RegionKernels, region_kernels
from nvcc_opt.verify.measure import Build, check, run_once, uncontained
from nvcc_opt.verify.state import state_check
from nvcc_opt.verify.verdict import Verdict
from nvcc_opt.workspace.runner import Completed, Runner

SANITIZER_EXIT = 86
_SUMMARY = re.compile(r"SUMMARY: (?:[^(\n]*\()?(\d+) errors?")
SANITIZER_SLOWDOWN = (
    20  # a run under compute-sanitizer takes at most this many times [run] timeout_s
)
PASSED = ("improved",)


def verify_code(
    config: ProjectConfig,
    region: Region,
    code: str,
    compile_args: list[str],
    *,
    runner: Runner,
    launcher: str,
) -> tuple[Verdict, list[str]]:
    """(verdict, notes). Notes say what could not be checked here (no sanitizer, no sandbox)."""
    label = f"verify-{os.getpid()}-{time.time_ns()}"
    runner = Recording(runner)  # every run of the verification counts for `uncontained:`
    bench = Benchmark(config, region, runner, launcher, label=label)
    notes: list[str] = []
    kernels = region_kernels(region.text, code)
    checks = FinalChecks(config, runner, bench.gpu, notes, bench.channel, kernels)
    try:
        # every pair timed: a speedup found while exploring is never dropped by the early stop
        verdict = bench.evaluate(
            code, compile_args, config.run.final_repeats, checks, stop_early=False
        )
        notes += [n for n in bench.notes if n not in notes]
        if not any(n.startswith("uncontained:") for n in notes):
            notes += uncontained(runner.completed)  # fresh inputs, state check, sanitizer too
        return verdict, notes
    finally:
        for tree in bench._trees or ():
            shutil.rmtree(tree.path, ignore_errors=True)
        bench.close()


class Recording:
    """A runner that keeps every result, so a verification's caveats cover all of its runs (the
    timed ones say `uncontained:` themselves; the fresh-input, state-check and sanitizer runs,
    and those of a candidate rejected early, did not)."""

    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        self.completed: list[Completed] = []
        self._lock = threading.Lock()

    def run(self, argv: Sequence[str], **options: Any) -> Completed:
        done = self.runner.run(argv, **options)
        with self._lock:  # builds, checks and runs of one verification run side by side
            self.completed.append(done)
        return done


@dataclass
class FinalChecks:
    """The checks only the final verification makes: fresh inputs, the runtime state check (with
    the channel library `channel()` gives and the region's `kernels`), then the sanitizer, before
    any timing (`__call__`); and once the timed runs are done, whether their speedup holds on the
    state check's changed inputs (`after_timing`, verify/changed_inputs.py). For
    `Benchmark.evaluate`."""

    config: ProjectConfig
    runner: Runner
    gpu: str
    notes: list[str]
    channel: Callable[[], Path | None] | None = None
    kernels: RegionKernels | None = None
    times: list[StateTimes] = field(default_factory=list)  # the state check's, for after_timing

    def __call__(self, base: Build, cand: Build) -> list[str]:
        config, runner, gpu, notes = self.config, self.runner, self.gpu, self.notes
        problems = _fresh_inputs(config, runner, base, cand, gpu)
        library = self.channel() if self.channel is not None else None
        if not problems and library is not None and self.kernels is not None:
            problems = state_check(
                config, runner, base, cand, gpu, library, self.kernels, notes, self.times
            )
        alone = self.kernels.alone if self.kernels is not None else None  # only they changed
        return problems or _sanitize(config, runner, base, cand, gpu, notes, alone)

    def after_timing(
        self, baseline: Sequence[Observed], candidate: Sequence[Observed]
    ) -> tuple[list[str], float | None]:
        """Rejection reasons from the timed runs' own measurements (their notes go to notes),
        for a candidate the timed runs call faster, and the share of its printed speedup it may
        be credited: what of its region's timed GPU gain holds on the changed inputs (None: not
        measured)."""
        reports = [o.channel for o in (*baseline, *candidate)]
        if self.kernels is None or any(r is None or not r.complete for r in reports):
            return [], None
        base = [o.channel.gpu_ns(self.kernels.original) for o in baseline if o.channel]
        cand = [o.channel.gpu_ns(self.kernels.candidate) for o in candidate if o.channel]
        times = self.times[-1] if self.times else None
        reasons, said = changed_input_reasons(base, cand, times)
        self.notes += [n for n in said if n not in self.notes]
        return reasons, None if reasons else changed_input_share(base, cand, times)


def _fresh_inputs(
    config: ProjectConfig, runner: Runner, base: Build, cand: Build, gpu: str
) -> list[str]:
    problems = []
    for args in config.verify.fresh_inputs:
        _, expected, _ = run_once(config, runner, base, gpu, args)
        _, output, _ = run_once(config, runner, cand, gpu, args)
        result = check(config, output, expected)
        problems += [f"fresh_inputs {' '.join(args)}: {r}" for r in result.reasons]
    return problems


def _sanitize(
    config: ProjectConfig,
    runner: Runner,
    base: Build,
    cand: Build,
    gpu: str,
    notes: list[str],
    only: frozenset[str] | None = None,
) -> list[str]:
    """memcheck and racecheck on the candidate. Only a clean pass (exit 0) passes silently: its
    errors reject it; a run that fails under the sanitizer where the original too fails is an
    `unmeasured:` caveat (review asks for --force); a failure the original does not have
    rejects it. `only`: the kernels to watch, where nothing else changed
    (verify/kernels.RegionKernels.alone); None watches every kernel.

    Time is bounded ([verify] sanitizer_timeout_s). A candidate that does not finish under the
    tool where the original does is rejected (it behaves differently when watched). Where the
    original does not finish either, both are watched again over their first
    `sanitizer_launches` launches only: a clean pass then is still an `unmeasured:` caveat (the
    later launches went unchecked), and the other outcomes are judged as for whole runs."""
    if not config.verify.sanitizer:
        notes.append("sanitizer: off ([verify] sanitizer = false)")
        return []
    sanitizer = shutil.which("compute-sanitizer")
    if sanitizer is None or shutil.which("nvidia-smi") is None:
        notes.append(
            "unavailable: compute-sanitizer did not run (it or a GPU is missing here), so the "
            "candidate's memory accesses and races were not checked"
        )
        return []
    problems: list[str] = []
    loose = not config.check.exit_status
    limit = min(config.verify.sanitizer_timeout_s, config.run.timeout_s * SANITIZER_SLOWDOWN)
    scope = [a for k in sorted(only or ()) for a in ("--kernel-name", f"kns={k}")]
    launches = config.verify.sanitizer_launches
    first = f"its first {launches} launches"
    for tool in ("memcheck", "racecheck"):

        def watch(build: Build, extra: list[str], tool: str = tool) -> Completed:
            return _under_sanitizer(config, runner, build, gpu, sanitizer, tool, extra, limit)

        done = watch(cand, scope)
        if _clean(done, loose):
            continue
        original = watch(base, scope)  # the same tool and kernels as the candidate
        if original.timed_out:
            # the program is too slow under the tool: both again, over their first launches
            whole = done
            limited = [*scope, "--launch-count", str(launches)]
            done = watch(cand, limited)
            if _clean(done, loose):
                said = (
                    f"a whole run under it took longer than {limit:g} s (the original's too)"
                    if whole.timed_out
                    else f"a whole run of the candidate found "
                    f"{_first_finding(whole.stdout, whole.exit_status)}, and the original's "
                    f"took longer than {limit:g} s"
                )
                notes.append(
                    f"unmeasured: compute-sanitizer {tool} passed the candidate over {first} "
                    f"only: {said}"
                )
                continue
            original = watch(base, limited)
        if done.timed_out and not original.timed_out:
            problems.append(
                f"sanitizer_{tool}: the candidate did not finish under it in {limit:g} s; the "
                f"original did in {original.wall_s:.0f} s"
            )
            continue
        if done.timed_out or original.timed_out:
            whose = "the candidate and the original" if done.timed_out else "the original"
            notes.append(
                f"unmeasured: compute-sanitizer {tool} took longer than {limit:g} s on {whose}, "
                f"even over {first}, so the candidate could not be judged by it"
            )
            continue
        found = _first_finding(done.stdout, done.exit_status)
        if _clean(original, loose):
            problems.append(f"sanitizer_{tool}: {found} (the original passes it)")
            continue
        ours, theirs = _errors(done, loose), _errors(original, loose)
        if ours is not None and theirs is not None and ours > theirs:
            problems.append(
                f"sanitizer_{tool}: {ours} errors where the original has {theirs} ({found})"
            )
            continue
        counted = f"{ours} errors, the original {theirs}; " if ours is not None else ""
        theirs_found = _first_finding(original.stdout, original.exit_status)
        notes.append(
            f"unmeasured: compute-sanitizer {tool} on the candidate: {counted}{found}; the "
            f"original does not pass it either ({theirs_found}), so the candidate could not be "
            "judged by it"
        )
    return problems


def _under_sanitizer(
    config: ProjectConfig,
    runner: Runner,
    build: Build,
    gpu: str,
    sanitizer: str,
    tool: str,
    extra: Sequence[str],
    limit: float,
) -> Completed:
    with (
        tempfile.TemporaryDirectory(prefix="nvcc-opt-sanitize-") as scratch,
        gpu_lease(gpu),  # a check on the GPU: never beside a measurement
    ):
        work = Path(scratch)  # {work} in [run]: this run's own folder, as for a timed run
        argv = [
            sanitizer, "--tool", tool, "--error-exitcode", str(SANITIZER_EXIT),
            "--target-processes", "all", *extra, *config.render_run(build.build_dir, gpu, work),
            *config.verify.sanitizer_args,
        ]  # fmt: skip
        return runner.run(
            argv,
            cwd=config.run_cwd(build.build_dir, gpu, work),
            env={**os.environ, **config.run_env(build.build_dir, gpu, work)},
            timeout_s=limit,
            writable=(Path(scratch),),  # the tree itself stays read-only
            readonly=build.readonly,
        )


def _first_finding(stdout: str, status: int | None) -> str:
    """The sanitizer's first report line (not its banner), or how the run ended."""
    if status != SANITIZER_EXIT:
        return f"exit status {status} under the sanitizer"
    lines = [x.strip("= ").strip() for x in stdout.splitlines() if x.startswith("=========")]
    lines = [x for x in lines if x and x != "COMPUTE-SANITIZER" and not x.startswith("at ")]
    words = ("error", "invalid", "race", "hazard", "leak", "uninitialized", "summary")
    first = next((x for x in lines if any(w in x.lower() for w in words)), None)
    return (first or (lines[0] if lines else "errors"))[:200]


def _clean(run: Completed, loose: bool) -> bool:
    """A clean pass under the sanitizer: exit 0, or, where the project's runs need not exit 0
    (`loose`: [check] exit_status = false), any status but the sanitizer's own."""
    return not run.timed_out and (
        run.exit_status == 0 or (loose and run.exit_status != SANITIZER_EXIT)
    )


def _errors(done: Completed, loose: bool = False) -> int | None:
    """The error count of the sanitizer's summary line (`ERROR SUMMARY: 3 errors`,
    `RACECHECK SUMMARY: 1 hazard displayed (1 error, 0 warnings)`), 0 for a clean run."""
    if done.timed_out:
        return None
    if _clean(done, loose):
        return 0
    found = _SUMMARY.findall(done.stdout)
    return max(int(n) for n in found) if found and done.exit_status == SANITIZER_EXIT else None


def machine(runner: Runner) -> str:
    """This host and its GPU, as a verification records it."""
    name = "no GPU"
    smi = shutil.which("nvidia-smi")
    if smi is not None:
        done = runner.run(
            [smi, "--query-gpu=name", "--format=csv,noheader"],
            cwd=Path.cwd(),
            timeout_s=30,
            sandbox=False,
        )
        if done.ok and done.stdout.strip():
            name = done.stdout.strip().splitlines()[0]
    return f"{socket.gethostname()} / {name}"


def record(
    rewrite_id: int,
    verdict: Verdict,
    context: CompileContext | None,
    where: str,
    notes: Sequence[str] = (),
) -> Verification:
    """The verification the store keeps: the verdict's reasons, then the notes on what could not
    be checked here (review reads `unmeasured:` and `uncontained:` notes from them)."""
    statistics: dict[str, object] = {}
    if verdict.comparison is not None:
        c = verdict.comparison
        statistics = {
            "speedup": c.speedup,
            "ci": [c.ci_low, c.ci_high],
            "p_value": c.p_value,
            "baseline_median_s": c.baseline.median,
            "candidate_median_s": c.candidate.median,
            "pairs": c.baseline.n,
        }
    return Verification(
        rewrite_id=rewrite_id,
        at="",
        passed=verdict.status in PASSED,
        status=verdict.status,
        reasons=(*verdict.reasons, *(n for n in notes if n not in verdict.reasons)),
        statistics=statistics,
        context=context,
        machine=where,
    )
