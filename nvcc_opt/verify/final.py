"""The independent final verification of a candidate or a stored rewrite.

Independent of what the model saw: fresh private trees configured and built from scratch, more
paired runs (`[run] final_repeats`), the full checks, inputs never shown while exploring
(`[verify] fresh_inputs`), the runtime state check (verify/state.py: the region's calls with
inputs changed between them, compared element by element with the original's), and
compute-sanitizer memcheck and racecheck where it is installed.

What could not be checked on this machine is a note, kept with the verification: `unmeasured:`
(no channel: no CUPTI, no GPU) and `uncontained:` (runs not contained) notes make `review` ask
for --force, as an unverified rewrite does.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from nvcc_opt.config import ProjectConfig
from nvcc_opt.pool.lease import gpu_lease
from nvcc_opt.records import CompileContext, Verification
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.kernels import RegionKernels, region_kernels
from nvcc_opt.verify.measure import Build, check, run_once
from nvcc_opt.verify.state import state_check
from nvcc_opt.verify.verdict import Verdict
from nvcc_opt.workspace.runner import Runner

SANITIZER_EXIT = 86
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
    bench = Benchmark(config, region, runner, launcher, label=label)
    notes: list[str] = []
    kernels = region_kernels(region.text, code)
    checks = final_checks(config, runner, bench.gpu, notes, bench.channel, kernels)
    try:
        # every pair timed: a speedup found while exploring is never dropped by the early stop
        verdict = bench.evaluate(
            code, compile_args, config.run.final_repeats, checks, stop_early=False
        )
        notes += [n for n in bench.notes if n not in notes]
        return verdict, notes
    finally:
        for tree in bench._trees or ():
            shutil.rmtree(tree.path, ignore_errors=True)
        bench.close()


def final_checks(
    config: ProjectConfig,
    runner: Runner,
    gpu: str,
    notes: list[str],
    channel: Callable[[], Path | None] | None = None,
    kernels: RegionKernels | None = None,
) -> Callable[[Build, Build], list[str]]:
    """The checks only the final verification makes: fresh inputs, the runtime state check
    (with the channel library `channel()` gives and the region's `kernels`), then the sanitizer."""

    def correct_everywhere(base: Build, cand: Build) -> list[str]:
        problems = _fresh_inputs(config, runner, base, cand, gpu)
        library = channel() if channel is not None else None
        if not problems and library is not None and kernels is not None:
            problems = state_check(config, runner, base, cand, gpu, library, kernels, notes)
        return problems or _sanitize(config, runner, cand, gpu, notes)

    return correct_everywhere


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
    config: ProjectConfig, runner: Runner, cand: Build, gpu: str, notes: list[str]
) -> list[str]:
    sanitizer = shutil.which("compute-sanitizer")
    if not config.verify.sanitizer:
        return []
    if sanitizer is None or shutil.which("nvidia-smi") is None:
        notes.append("sanitizer: not run (compute-sanitizer or a GPU is missing here)")
        return []
    problems = []
    for tool in ("memcheck", "racecheck"):
        with (
            tempfile.TemporaryDirectory(prefix="nvcc-opt-sanitize-") as scratch,
            gpu_lease(gpu),  # a check on the GPU: never beside a measurement
        ):
            work = Path(scratch)  # {work} in [run]: this run's own folder, as for a timed run
            argv = [
                sanitizer, "--tool", tool, "--error-exitcode", str(SANITIZER_EXIT),
                "--target-processes", "all", *config.render_run(cand.build_dir, gpu, work),
                *config.verify.sanitizer_args,
            ]  # fmt: skip
            done = runner.run(
                argv,
                cwd=config.run_cwd(cand.build_dir, gpu, work),
                env={**os.environ, **config.run_env(cand.build_dir, gpu, work)},
                timeout_s=config.run.timeout_s * 20,
                writable=(Path(scratch),),  # the tree itself stays read-only
                readonly=cand.readonly,
            )
        if done.exit_status == SANITIZER_EXIT:
            first = next((x for x in done.stdout.splitlines() if "=========" in x), "errors")
            problems.append(f"sanitizer_{tool}: {first.strip('= ').strip()[:200]}")
        elif done.timed_out:
            notes.append(f"sanitizer: {tool} timed out")
    return problems


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
