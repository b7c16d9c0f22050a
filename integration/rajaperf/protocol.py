"""The paper's protocol on a prepared checkout: every tagged kernel optimized N times by
`nvcc-opt optimize --model SPEC`, each run's result kept as it ends, the whole written as a
suite bench report (nvcc_opt.bench.results), with the paper's rule beside it.

Resumable: `<out>/runs/<Group_KERNEL>/run-<n>.json` holds one finished run; a later call skips
what is there, so a protocol spread over several device sessions continues where it stopped.
The paper's speedup per run (`options.paper_speedups`): a proposed rewrite's verified speedup;
an original kept as correct 1.0; a failure 0 (no build: a kernel that could not be tagged or
built; an incorrect final answer; optimize crashing or running past --timeout). The report's own
rows keep the suite bench's meaning (best verified speedup, errors counted apart).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path

from integration.rajaperf.kernels import KERNELS, Kernel
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import cuda_file, kernel_folder, tagged_kernels
from nvcc_opt.bench.optimize_output import kernel_runs, optimize_failure, parse_optimize_output
from nvcc_opt.bench.results import AppRun, KernelRun, Report
from nvcc_opt.bench.results import Kernel as SuiteKernel
from nvcc_opt.bench.results import paper_speedup as report_paper_speedup
from nvcc_opt.bench.suite import machine
from nvcc_opt.bench.summary import model_slug, rows_for, summarize
from nvcc_opt.paths import store_path
from nvcc_opt.pool.gpu_queue import each_on_a_gpu

APP = "RAJAPerf"
NO_TOOLS_FLAG = "--no-tools"
NO_TOOLS_MISSING = (
    "this nvcc-opt optimize has no no-tools mode (its --help names no --no-tools): install an"
    " nvcc-opt whose optimize has --no-tools (the region in the prompt, no tool, one answer,"
    " verified like any other)"
)


class ProtocolError(RuntimeError):
    """The protocol cannot start; the message says why."""


@dataclass(frozen=True)
class Options:
    checkout: Path
    model: str
    out: Path
    runs: int = 5
    only: tuple[str, ...] = ()
    timeout_s: float = 3600.0
    optimize_args: tuple[str, ...] = ()
    no_tools: bool = False
    nvcc_opt: tuple[str, ...] = ()  # the command; default: the nvcc-opt beside this Python
    gpus: tuple[str, ...] = ()  # one optimize per GPU at once (CUDA_VISIBLE_DEVICES values)


def nvcc_opt_command() -> tuple[str, ...]:
    beside = Path(sys.executable).with_name("nvcc-opt")
    if beside.is_file():
        return (str(beside),)
    found = shutil.which("nvcc-opt")
    return (found,) if found else (sys.executable, "-m", "nvcc_opt")


def has_no_tools_mode(command: Sequence[str]) -> bool:
    done = subprocess.run(
        [*command, "optimize", "--help"], capture_output=True, text=True, timeout=120, check=False
    )
    return NO_TOOLS_FLAG in done.stdout


def paper_speedup(run: KernelRun) -> float:
    """The paper's number for one run: failures (no answer, no build, guard, incorrect, error)
    are 0 (`bench.results.paper_speedup`, the rule `nvcc-opt report` draws with)."""
    return report_paper_speedup(run)


def run_path(out: Path, kernel: Kernel, run: int) -> Path:
    return out / "runs" / kernel.full_name / f"run-{run}.json"


def load_run(path: Path) -> KernelRun | None:
    """A finished run kept by an earlier call, or None (absent or unreadable: run it again)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        data["reasons"] = tuple(data.get("reasons") or ())
        data["tried"] = ()
        return KernelRun(**data)
    except (OSError, ValueError, TypeError):
        return None


def save_run(path: Path, run: KernelRun) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = asdict(run)
    data["tried"] = []  # kept in the trace; the report reads them from there
    temp = path.with_name(path.name + ".tmp")
    temp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(temp, path)


def failed(kernel: Kernel, file: str, run: int, why: str, wall_s: float | None = None) -> KernelRun:
    return KernelRun(
        app=APP, file=file, region=kernel.full_name, run=run, status="error", wall_s=wall_s,
        reasons=(why,), outcome="error",
    )  # fmt: skip


def optimize_once(
    options: Options, kernel: Kernel, run: int, command: Sequence[str], gpu: str | None = None
) -> KernelRun:
    """One `nvcc-opt optimize` of the kernel's region (on `gpu`: optimize's --gpus, so its runs
    and its private build trees are that GPU's); a crash or a timeout is a failed run."""
    source = cuda_file(options.checkout, kernel)
    file = source.relative_to(options.checkout).as_posix()
    # The store the build's launcher uses for this checkout's files: accepted rewrites must land
    # where the next build looks (not wherever this command happens to be run from).
    store = store_path(near=source.parent)
    argv = [
        *command, "--store", str(store), "optimize", f"{source}:{kernel.full_name}",
        "--model", options.model,
        "--root", str(kernel_folder(options.checkout, kernel)), "--seed", str(run), "--json",
        *options.optimize_args, *((NO_TOOLS_FLAG,) if options.no_tools else ()),
        *(("--gpus", gpu) if gpu is not None else ()),
    ]  # fmt: skip
    started = time.monotonic()
    with subprocess.Popen(
        argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True
    ) as process:
        try:
            stdout, stderr = process.communicate(timeout=options.timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.communicate()
            why = f"timed_out: optimize ran past {options.timeout_s:g} s"
            return failed(kernel, file, run, why)
    wall = time.monotonic() - started
    results, cannot = parse_optimize_output(stdout, stderr)
    if results:
        found = kernel_runs(APP, run, results, options.checkout, options.out)
        mine = [r for r in found if r.region == kernel.full_name]
        if mine:
            return mine[0]
    why = cannot.get(kernel.full_name) or optimize_failure(stderr, stdout)
    return failed(kernel, file, run, f"optimize exited {process.returncode}: {why}", wall)


def optimize_all(
    options: Options,
    todo: Sequence[tuple[Kernel, int, Path]],
    command: Sequence[str],
    say: Callable[[str], None],
) -> dict[tuple[str, int], KernelRun]:
    """The runs of `todo`, each saved as it ends (so an interrupted protocol resumes): one at a
    time, or with `options.gpus` one per GPU at once, each optimize given its GPU."""
    lock = threading.Lock()

    def one(job: tuple[Kernel, int, Path], gpu: str | None) -> KernelRun:
        kernel, n, path = job
        with lock:
            say(f"{kernel.full_name} run {n}: optimizing" + (f" on GPU {gpu}" if gpu else ""))
        result = optimize_once(options, kernel, n, command, gpu)
        save_run(path, result)
        return result

    results = each_on_a_gpu(todo, options.gpus, one)
    return {(k.full_name, n): result for (k, n, _), result in zip(todo, results, strict=True)}


def chosen_kernels(options: Options) -> list[Kernel]:
    """Every kernel, or those --only names in the order given (a call with little device time
    runs the most wanted first); ProtocolError naming unknown ones."""
    if not options.only:
        return list(KERNELS)
    picked: list[Kernel] = []
    unknown = []
    for name in options.only:
        found = [k for k in KERNELS if name in (k.name, k.full_name)]
        if not found:
            unknown.append(name)
        picked += [k for k in found if k not in picked]
    if unknown:
        raise ProtocolError(f"unknown kernels: {', '.join(sorted(unknown))}")
    return picked


def run_protocol(options: Options, say: Callable[[str], None] = print) -> Report:
    """Every chosen kernel's runs (kept ones reused), then the report."""
    command = options.nvcc_opt or nvcc_opt_command()
    if options.no_tools and not has_no_tools_mode(command):
        raise ProtocolError(NO_TOOLS_MISSING)
    ledger = Ledger(options.checkout)
    if not ledger.changes:
        raise ProtocolError(f"{options.checkout}: not prepared; run prepare first")
    not_tagged = json.loads(ledger.info.get("not_tagged", "{}"))
    tagged = {k.full_name for k in tagged_kernels(options.checkout)}
    started = time.time()
    by_run: dict[int, list[KernelRun]] = {n: [] for n in range(1, options.runs + 1)}
    suite_kernels, no_base = [], []
    todo: list[tuple[Kernel, int, Path]] = []
    for kernel in chosen_kernels(options):
        if kernel.has_base_cuda and kernel.full_name in tagged:
            todo += [(kernel, n, run_path(options.out, kernel, n))
                     for n in range(1, options.runs + 1)
                     if load_run(run_path(options.out, kernel, n)) is None]  # fmt: skip
    done = optimize_all(options, todo, command, say)
    for kernel in chosen_kernels(options):
        if not kernel.has_base_cuda:
            no_base.append(kernel.full_name)
            continue
        file = cuda_file(options.checkout, kernel).relative_to(options.checkout).as_posix()
        suite_kernels.append(SuiteKernel(APP, file, kernel.full_name))
        for n in range(1, options.runs + 1):
            path = run_path(options.out, kernel, n)
            new = done.get((kernel.full_name, n))
            result = new or load_run(path)
            if new is None and result is not None:
                say(f"{kernel.full_name} run {n}: kept from an earlier call")
            elif result is None:  # not tagged: nothing was built to optimize
                why = not_tagged.get(kernel.full_name, "not tagged by prepare")
                result = failed(kernel, file, n, f"no_build: {why}")
                save_run(path, result)
            say(f"{kernel.full_name} run {n}: {result.status}, paper speedup"
                f" {paper_speedup(result):.3f}")  # fmt: skip
            by_run[n].append(result)
    runs = [AppRun(APP, n, tuple(k), None, sum(r.wall_s or 0 for r in k), str(options.out))
            for n, k in by_run.items()]  # fmt: skip
    rows = rows_for(suite_kernels, runs, options.runs)
    paper = {
        k.region: [paper_speedup(r) for n in by_run for r in by_run[n] if r.region == k.region]
        for k in suite_kernels
    }
    flat = [s for values in paper.values() for s in values]
    date = time.strftime("%Y-%m-%d", time.localtime(started))
    mode = "-no-tools" if options.no_tools else ""
    return Report(
        model=options.model,
        date=date,
        started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        command=" ".join(sys.argv),
        machine=machine(),
        options={
            "integration": "rajaperf",
            "checkout": str(options.checkout),
            "version": ledger.info.get("version", ""),
            "commit": ledger.info.get("commit", ""),
            "runs": options.runs,
            "no_tools": options.no_tools,
            "optimize_args": list(options.optimize_args),
            "timeout_s": options.timeout_s,
            "gpus": list(options.gpus),
            "paper_speedups": paper,
            "paper_mean_speedup": sum(flat) / len(flat) if flat else None,
            "no_base_cuda": no_base,
            "not_tagged": not_tagged,
            "stem": f"rajaperf-{date}-{model_slug(options.model)}{mode}",
        },  # fmt: skip
        rows=tuple(rows),
        overall=summarize(rows),
        runs=tuple(runs),
        wall_s=time.time() - started,
        not_run=tuple(no_base),
    )
