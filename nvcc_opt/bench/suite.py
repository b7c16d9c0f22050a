"""`nvcc-opt bench suite`: optimize every kernel of the suite N times and write a results table.

Each run of an app works on a private copy of it (`<out>/work/<report>/<app>/run-<i>/`, with the
suite's shared folders such as `common/` beside it): a fresh build tree configured with nvcc-opt
as the CUDA launcher, a fresh store (`NVCC_OPT_STORE`, so the traces land in
`<app>/run-<i>/state/traces/`), then `nvcc-opt optimize --json --seed i` as a subprocess. Neither
the suite's folders nor the user's store are touched. An app that fails (configure, build,
optimize crash, timeout) becomes rows with an "error: ..." verdict and the bench goes on.

With `--gpus` the apps run concurrently, one per GPU: a work queue hands the next app run to the
first GPU that frees up, and that run's whole life (configure, build, optimize) has
`CUDA_VISIBLE_DEVICES` set to its GPU (optimize also gets `--gpus ID`, since the app's own runs
take their GPU from `[gpu] devices`, which would otherwise send every app to the same one), so
one app's timing never shares a GPU with another's. The report keeps the sequential order.
Without it, one app run after another in the caller's environment.

Ctrl-C (SIGINT) stops the bench as a timeout stops optimize: the runs in flight get SIGINT and
become "interrupted" rows with whatever optimize verified, runs not yet started are skipped, and
the report holds what finished (apps with no run started are left out, so that merging the
report never replaces another session's rows with empty ones).

This module holds the queue of app runs and the report; one app run is `app_run.py`, what it left
(optimize's JSON, the traces) is read by `optimize_output.py`; the rows, the summary and the files
are `results.py`'s, `summary.py`'s and `render.py`'s.
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from nvcc_opt.bench.app_run import run_app
from nvcc_opt.bench.apps import SuiteError, find_apps, scanned_kernels
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.render import free_stem
from nvcc_opt.bench.results import INTERRUPTED, AppRun, Report, short_reason
from nvcc_opt.bench.summary import failed_runs, model_slug, rows_for, summarize
from nvcc_opt.pool.gpu_queue import GpuQueue

GPU_QUERY = ("nvidia-smi", "--query-gpu=index", "--format=csv,noheader")


def gpu_ids(spec: str | None) -> tuple[str, ...]:
    """The GPUs of `--gpus`: comma-separated CUDA_VISIBLE_DEVICES values, or `all` for every GPU
    nvidia-smi lists; () without the option. SuiteError for an empty or repeated entry (two apps
    would share a GPU) and for `all` where nvidia-smi is missing, fails or lists none."""
    if spec is None:
        return ()
    if spec.strip().lower() == "all":
        return listed_gpus()
    ids = tuple(s.strip() for s in spec.split(","))
    if not all(ids):
        raise SuiteError(f"--gpus {spec!r}: an entry is empty (use e.g. 0,1,2,3 or all)")
    repeated = sorted({s for s in ids if ids.count(s) > 1})
    if repeated:
        raise SuiteError(f"--gpus {spec!r}: {', '.join(repeated)} named twice (one app per GPU)")
    return ids


def listed_gpus() -> tuple[str, ...]:
    """The indices `nvidia-smi --query-gpu=index` lists. SuiteError when it cannot tell."""
    if shutil.which(GPU_QUERY[0]) is None:
        raise SuiteError("--gpus all: nvidia-smi is not on PATH; name the GPUs, e.g. --gpus 0,1")
    try:
        done = subprocess.run(GPU_QUERY, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise SuiteError(f"--gpus all: nvidia-smi did not answer: {exc}") from exc
    if done.returncode != 0:
        why = short_reason(done.stderr + "\n" + done.stdout)
        raise SuiteError(f"--gpus all: nvidia-smi exited {done.returncode}: {why}")
    ids = tuple(s.strip() for s in done.stdout.splitlines() if s.strip())
    if not ids:
        raise SuiteError("--gpus all: nvidia-smi lists no GPU")
    return ids


def machine() -> dict[str, str]:
    """This host, its GPUs (nvidia-smi, where it works) and nvcc."""
    found = {"host": socket.gethostname()}
    for key, argv in (
        ("gpu", ["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"]),
        ("nvcc", ["nvcc", "--version"]),
    ):
        if shutil.which(argv[0]) is None:
            found[key] = "none"
            continue
        try:
            done = subprocess.run(argv, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            found[key] = "unavailable"
            continue
        lines = [s.strip() for s in done.stdout.splitlines() if s.strip()]
        if done.returncode != 0 or not lines:
            found[key] = "unavailable"
        elif key == "gpu":
            found[key] = "; ".join(lines)
        else:
            found[key] = next((s for s in reversed(lines) if s.startswith("Build")), lines[-1])
    return found


def report_name(options: Options, date: str) -> str:
    return f"suite-{date}-{model_slug(options.spec)}"


def run_suite(options: Options, echo: Callable[[str], None] = lambda _: None) -> Report:
    """Every app, every run (one at a time, or one per GPU of `options.gpus` at once), then the
    table in the apps' order. Interrupted (Ctrl-C), the table of what finished."""
    apps = find_apps(options.suite, options.only)
    started = time.time()
    date = time.strftime("%Y-%m-%d", time.localtime(started))
    options.out.mkdir(parents=True, exist_ok=True)
    stem = free_stem(options.out, report_name(options, date))
    work = options.out / "work" / stem
    jobs = [(app, run) for app in apps for run in range(1, options.runs + 1)]
    results, interrupted = run_jobs(jobs, options, work, _whole_lines(echo))
    runs = kept_runs(jobs, results, work)
    ran = {r.app for r in runs}
    kernels = [k for app in apps if app.name in ran for k in scanned_kernels(app)]
    rows = rows_for(kernels, runs, options.runs)
    return Report(
        model=options.spec,
        date=date,
        started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(started)),
        command=options.command_line,
        machine=machine(),
        options={
            "suite": str(options.suite),
            "runs": options.runs,
            "only": list(options.only),
            "time_s": options.time_s,
            "turns": options.turns,
            "cmake_args": list(options.cmake_args),
            "timeout_s": options.timeout_s,
            "gpus": list(options.gpus),
            "start_within_s": options.start_within_s,
            "out": str(options.out),
            "work": str(work),
            "stem": stem,
        },  # fmt: skip
        rows=tuple(rows),
        overall=summarize(rows, failed_runs(runs)),
        runs=tuple(runs),
        wall_s=time.time() - started,
        interrupted=interrupted,
        not_run=tuple(app.name for app in apps if app.name not in ran),
    )


Job = tuple[Path, int]  # an app and the number of its run


def run_jobs(
    jobs: Sequence[Job],
    options: Options,
    base: Path,
    echo: Callable[[str], None],
    on_done: Callable[[Path, int, AppRun], None] | None = None,
) -> tuple[list[AppRun | None], bool]:
    """Every job's AppRun in the jobs' order, whatever order they finish in, and whether the
    bench was interrupted. As many run at once as there are GPUs in `options.gpus`, each on a GPU
    taken from a queue and given back when its run ends (so a GPU never idles while jobs wait);
    without GPUs one at a time, in the caller's environment. On Ctrl-C the runs in flight are
    stopped (see `run_app`) and the jobs not started yet give None; so do the jobs whose turn
    comes more than `options.start_within_s` after the start. `on_done` sees each run as it
    ends, in its worker thread (a caller that records runs as they finish resumes after a
    stop)."""
    free: GpuQueue[str | None] = GpuQueue(options.gpus or (None,))
    stop = threading.Event()
    began = time.monotonic()
    within = options.start_within_s

    def on_a_free_gpu(app: Path, run: int) -> AppRun | None:
        if stop.is_set():
            return None
        with free.taken() as gpu:
            if within is not None and time.monotonic() - began > within:
                return None  # too late to begin: the report lists the app as not started
            say = _prefixed(echo, f"[{app.name} run {run}/{options.runs}]")
            result = run_app(app, run, options, base, say, gpu, stop)
            if on_done is not None:
                on_done(app, run, result)
            return result

    with ThreadPoolExecutor(max_workers=free.size, thread_name_prefix="bench") as pool:
        futures = [pool.submit(on_a_free_gpu, app, run) for app, run in jobs]
        try:
            return [f.result() for f in futures], False
        except KeyboardInterrupt:
            stop.set()
            echo("interrupted: stopping the runs in flight; the report holds what finished")
            return [f.result() for f in futures], True
        except BaseException:
            stop.set()  # a bug of ours: the other runs stop too rather than run on unreported
            raise


def kept_runs(jobs: Sequence[Job], results: Sequence[AppRun | None], base: Path) -> list[AppRun]:
    """The runs of the report: every finished or stopped one, and for an app with one of those,
    its runs that never started as "interrupted" (so its rows count all its runs); an app none
    of whose runs started is left out."""
    ran = {r.app for r in results if r is not None}
    runs = []
    for (app, run), result in zip(jobs, results, strict=True):
        if result is not None:
            runs.append(result)
        elif app.name in ran:
            why = f"{INTERRUPTED} before it started"
            runs.append(AppRun(app.name, run, (), why, 0.0, str(base / app.name / f"run-{run}")))
    return runs


def _whole_lines(echo: Callable[[str], None]) -> Callable[[str], None]:
    """`echo` for several threads: one line at a time, never two interleaved."""
    lock = threading.Lock()

    def locked(message: str) -> None:
        with lock:
            echo(message)

    return locked


def _prefixed(echo: Callable[[str], None], label: str) -> Callable[[str], None]:
    return lambda message: echo(f"{label} {message}")
