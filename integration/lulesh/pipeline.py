"""The one command: build, baseline, optimize, accept, rebuild, and the table, interleaved.

Each step runs a real program through a `Runner` (nvcc_opt.workspace.runner): cmake, LULESH,
nsys or else ncu for the kernel time (timing.py), and the `nvcc-opt` command (optimize,
review). Tests script only the nvcc-opt commands that need a GPU, and only where there is none.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from integration.lulesh import checkout as checkouts
from integration.lulesh import project, table, timing
from integration.lulesh.output import KERNEL, OutputError, compare
from integration.lulesh.project import Problem, StepError
from nvcc_opt.workspace.runner import Runner

OPTIMIZE_TIMEOUT_S = 6 * 3600.0
BASELINE_TREE = "build-baseline"  # plain nvcc: a rewrite accepted earlier never reaches it


@dataclass(frozen=True)
class Options:
    lulesh: Path  # the user's checkout
    work: Path
    model: str
    problem: Problem = Problem()
    pairs: int = 5
    out: Path | None = None  # default WORK/lulesh-table
    launcher: str = "nvcc-opt"
    arch: str = "90"
    optimize_args: tuple[str, ...] = ()
    force_accept: bool = False  # review --accept --force (recorded with the decision)


def nvcc_opt_command(launcher: str) -> list[str]:
    return [launcher]


def prepare(runner: Runner, opts: Options) -> tuple[checkouts.Checkout, Path]:
    """Copy and tag the sources, write nvcc-opt.toml, configure and build; the program."""
    found = checkouts.find(opts.lulesh)
    opts.work.mkdir(parents=True, exist_ok=True)
    project.copy_sources(found, opts.work)
    project.write_config(found, opts.work, opts.problem)
    project.configure(runner, opts.work, opts.launcher, opts.arch)
    return found, project.build(runner, opts.work)


def optimize(runner: Runner, opts: Options) -> tuple[int | None, list[str], dict[str, Any] | None]:
    """`nvcc-opt optimize` on the kernel; the proposed rewrite's id (None: none), why, and
    optimize's summary of the run (its JSON object: explanation, speedup, trace path, wall
    time; None when it printed none). A failed optimize is a reason, not an error: the
    baseline's row of the table still comes."""
    region = f"{opts.work / 'src' / 'lulesh.cu'}:{KERNEL}"
    argv = [*nvcc_opt_command(opts.launcher), "optimize", "--model", opts.model,
            "--root", str(opts.work), "--json", *opts.optimize_args, region]  # fmt: skip
    done = runner.run(argv, cwd=opts.work, timeout_s=OPTIMIZE_TIMEOUT_S, sandbox=False)
    if not done.ok:
        why = "timed out" if done.timed_out else f"exit status {done.exit_status}"
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        return None, [f"nvcc-opt optimize failed ({why}): {last[0][:400]}"], None
    results = last_json_list(done.stdout)
    if results is None:
        why = "nvcc-opt optimize --json printed no JSON list on its standard output"
        return None, [why], None
    summary = results[0] if results else None
    for result in results:
        if result.get("rewrite_id") is not None:
            return int(result["rewrite_id"]), list(result.get("reasons", [])), result
    reasons = [str(r) for result in results for r in result.get("reasons", [])]
    return None, reasons or ["optimize proposed no rewrite"], summary


def last_json_list(out: str) -> list[dict[str, Any]] | None:
    """The last JSON list of objects that starts a line of `out` (progress lines come first and
    may hold brackets of their own)."""
    decoder = json.JSONDecoder()
    starts = [i for i, c in enumerate(out) if c == "[" and (i == 0 or out[i - 1] == "\n")]
    for start in reversed(starts):
        try:
            value, _ = decoder.raw_decode(out[start:])
        except ValueError:
            continue
        if isinstance(value, list) and all(isinstance(v, dict) for v in value):
            return value
    return None


def accept(runner: Runner, opts: Options, rewrite_id: int) -> None:
    argv = [*nvcc_opt_command(opts.launcher), "review", "--accept", str(rewrite_id),
            "--reason", f"integration.lulesh table (model {opts.model})",
            *(["--force"] if opts.force_accept else [])]  # fmt: skip
    project.step(runner, "nvcc-opt review --accept", argv, opts.work, 600)


def run_table(
    runner: Runner, opts: Options, progress: Callable[[str], None] = lambda _: None
) -> dict[str, Any]:
    """The whole experiment; the result as table.SCHEMA, also written as JSON and Markdown."""
    size, iters, timeout = opts.problem.size, opts.problem.iters, opts.problem.timeout_s
    progress("preparing and building the baseline")
    found, _ = prepare(runner, opts)
    project.configure(runner, opts.work, None, opts.arch, BASELINE_TREE)
    baseline = project.keep_binary(
        project.build(runner, opts.work, BASELINE_TREE), opts.work, "lulesh-baseline"
    )
    scratch = opts.work / "runs"
    scratch.mkdir(exist_ok=True)
    progress("baseline run")
    try:
        base = timing.run_once(runner, timing.lulesh_argv(baseline, size, iters), scratch, timeout)
    except OutputError as exc:
        raise StepError(f"the baseline run failed: {exc}") from None
    progress(f"nvcc-opt optimize --model {opts.model}")
    rewrite_id, why, summary = optimize(runner, opts)
    binaries = {"baseline": baseline}
    reasons: list[str] = []
    notes = [] if rewrite_id is not None else [f"no rewrite proposed: {'; '.join(why)}"]
    if rewrite_id is not None:
        accept(runner, opts, rewrite_id)
        progress(f"rewrite {rewrite_id} accepted; rebuilding")
        binaries["optimized"] = project.keep_binary(
            project.build(runner, opts.work), opts.work, "lulesh-optimized"
        )
        try:
            opt = timing.run_once(
                runner, timing.lulesh_argv(binaries["optimized"], size, iters), scratch, timeout
            )
            reasons = compare(base, opt, project.ENERGY_RTOL, project.SYMMETRY_ATOL)
        except OutputError as exc:
            reasons = [f"optimized run failed: {exc}"]
    samples = timing.interleaved(
        runner, binaries, size=size, iters=iters, pairs=opts.pairs, cwd=scratch,
        timeout_s=timeout, progress=progress,
    )  # fmt: skip
    result = _result(opts, found, rewrite_id, base.to_dict(), reasons, samples, notes)
    result["optimize"] = summary  # what the model tried and why, and where its trace is
    table.write(result, opts.out or opts.work / "lulesh-table")
    return result


def _result(
    opts: Options,
    found: checkouts.Checkout,
    rewrite_id: int | None,
    base: dict[str, Any],
    reasons: list[str],
    samples: dict[str, timing.Samples],
    notes: list[str],
) -> dict[str, Any]:
    empty = timing.Samples()
    b, o = samples["baseline"], samples.get("optimized", empty)
    kernel_note = timing.kernel_note(b.profiler)  # the tool interleaved used
    app_note = "LULESH's main-loop time (grind time x iterations x zones)"
    return {
        "schema": table.SCHEMA, "kernel": KERNEL,
        "lulesh": {"src": str(found.src), "commit": found.commit},
        "model": opts.model, "rewrite_id": rewrite_id,
        "problem": {"size": opts.problem.size, "iters": opts.problem.iters},
        "pairs": opts.pairs, "gpu": gpu_name(), "correct": not reasons,
        "check_reasons": reasons, "baseline_figures": base,
        "rows": [
            table.row("kernel", "ms", b.kernel_ms, o.kernel_ms, kernel_note),
            table.row("application", "s", [f.elapsed_s for f in b.figures],
                      [f.elapsed_s for f in o.figures], app_note),
        ],
        "failures": [f"{name}: {f}" for name, s in samples.items() for f in s.failures],
        "notes": notes,
    }  # fmt: skip


def gpu_name() -> str:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return ""
    try:
        done = subprocess.run(
            [smi, "--query-gpu=name", "--format=csv,noheader", "-i",
             os.environ.get("CUDA_VISIBLE_DEVICES", "0").split(",")[0]],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return done.stdout.strip().splitlines()[0] if done.stdout.strip() else ""
