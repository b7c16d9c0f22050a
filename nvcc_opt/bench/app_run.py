"""One run of one suite app: a private copy with the suite's shared folders, a fresh build tree
and store, configure, build, then `nvcc-opt optimize --json` with its output read into rows.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
import zlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from nvcc_opt.bench.apps import app_kernels, build_dir_name, shared_folders
from nvcc_opt.bench.optimize_output import kernel_runs, optimize_failure, parse_optimize_output
from nvcc_opt.bench.options import Options
from nvcc_opt.bench.process import run_quiet, run_streaming
from nvcc_opt.bench.results import (
    INTERRUPTED,
    REASON_CHARS,
    AppRun,
    KernelRun,
    first_line,
)
from nvcc_opt.config import ConfigError, load

TIMEOUT = "timeout"  # a run's stop reason when the bench's --timeout ended it


def bench_env(store: Path, gpu: str | None = None) -> dict[str, str]:
    """The environment of every step: a fresh store; the launcher on (a recursion guard or
    NVCC_OPT_DISABLE inherited from the caller would make it pass through and record nothing);
    CUDA_VISIBLE_DEVICES=gpu where the run has a GPU of its own (--gpus), else inherited."""
    env = {k: v for k, v in os.environ.items() if k not in ("NVCC_OPT_ACTIVE", "NVCC_OPT_DISABLE")}
    env["NVCC_OPT_STORE"] = str(store)
    env["PYTHONUNBUFFERED"] = "1"
    if gpu is not None:
        env["CUDA_VISIBLE_DEVICES"] = gpu
    return env


def run_seed(options: Options, app: str, run: int) -> int:
    """optimize's --seed for one run: the run's number, or with `seed_per_app` a stable number
    from the app's name and the run, so that --parity's random tool subsets differ between the
    apps of one run and not only between runs."""
    if not options.seed_per_app:
        return run
    return zlib.crc32(f"{app}\0{run}".encode()) % 1_000_003


def optimize_argv(options: Options, run: int, gpu: str | None = None, app: str = "") -> list[str]:
    """optimize's command line; with the run's GPU (--gpus), optimize's own `--gpus ID`, so the
    app's runs take that GPU rather than the first of its `[gpu] devices`."""
    seed = str(run_seed(options, app, run))
    argv = [options.launcher, "optimize", "--model", options.spec, "--json", "--seed", seed]
    if gpu is not None:
        argv += ["--gpus", gpu]
    if options.time_s is not None:
        argv += ["--time", f"{options.time_s:g}"]
    if options.turns is not None:
        argv += ["--turns", str(options.turns)]
    return argv + list(options.optimize_args)


def optimize_timeout(options: Options, regions: int) -> float:
    """Per optimize call: --timeout, else per region the agent's time (default 3600 s) plus 900 s
    for the baseline and the final verification."""
    if options.timeout_s is not None:
        return options.timeout_s
    return max(1, regions) * ((options.time_s if options.time_s is not None else 3600.0) + 900.0)


def run_app(
    app: Path,
    run: int,
    options: Options,
    base: Path,
    say: Callable[[str], None],
    gpu: str | None = None,
    stop: threading.Event | None = None,
) -> AppRun:
    """One run of one app in `base/<app>/run-<run>` (a copy, its build tree, its store; `base` is
    the report's work folder), every step on `gpu` when given. Never raises for the app's own
    failures: they become `error`; so does `stop` (the bench interrupted) between or in steps."""
    started = time.monotonic()
    work = base / app.name / f"run-{run}"
    work.mkdir(parents=True, exist_ok=True)

    def failed(why: str, kernels: Sequence[KernelRun] = ()) -> AppRun:
        say(f"error: {why}")
        return AppRun(
            app.name, run, tuple(kernels), why, time.monotonic() - started, str(work), gpu
        )

    def stopped() -> bool:
        return stop is not None and stop.is_set()

    try:
        build_name = build_dir_name(app)
    except ConfigError as exc:
        return failed(f"config: {exc}")
    root = work / app.name
    store = work / "state" / "store.db"
    shutil.rmtree(root, ignore_errors=True)
    shutil.rmtree(store.parent, ignore_errors=True)
    skip = (app / build_name).resolve()
    shutil.copytree(
        app,
        root,
        symlinks=True,
        ignore=lambda folder, names: [n for n in names if (Path(folder) / n).resolve() == skip],
    )
    for shared in shared_folders(app.parent):  # e.g. common/, which apps include as ../common
        shutil.rmtree(work / shared.name, ignore_errors=True)
        shutil.copytree(shared, work / shared.name, symlinks=True)
    env = bench_env(store, gpu)
    build = root / build_name
    configure = [
        "cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
        f"-DCMAKE_CUDA_COMPILER_LAUNCHER={options.launcher}", *options.cmake_args,
    ]  # fmt: skip
    say("configuring" if gpu is None else f"configuring (GPU {gpu})")
    done = run_quiet(configure, root, env, 600.0, stop)
    if stopped():  # the bench's Ctrl-C stops configure and build too
        return failed(INTERRUPTED)
    if done is not None:
        return failed(f"configure failed: {done}")
    try:
        config = load(root)
    except ConfigError as exc:
        return failed(f"config: {first_line(str(exc), REASON_CHARS)}")
    say("building")
    build_argv = config.render_build(config.build_dir)
    done = run_quiet(build_argv, root, env, config.build.timeout_s, stop)
    if stopped():
        return failed(INTERRUPTED)
    if done is not None:
        return failed(f"build failed: {done}")
    regions = len(app_kernels(root, build_name))
    say("optimizing")
    ran = run_streaming(
        optimize_argv(options, run, gpu, app.name),
        cwd=root,
        env=env,
        timeout_s=optimize_timeout(options, regions),
        on_err_line=say,  # optimize --json: progress on stderr, the JSON alone on stdout
        stop=stop,
    )
    results, cannot = parse_optimize_output(ran.stdout, ran.stderr)
    kernels = kernel_runs(app.name, run, results or (), root, base)
    reached = {k.region for k in kernels}
    for region, why in cannot.items():
        if region not in reached:
            kernels.append(_unreached(app.name, run, root, region, f"cannot optimize: {why}"))
    if ran.stopped:
        return failed(INTERRUPTED, kernels)
    if ran.timed_out:  # optimize got the same SIGINT: what it stopped counts, as a timeout
        kernels = [replace(k, stopped=TIMEOUT) if k.stopped == INTERRUPTED else k for k in kernels]
        return failed(f"{TIMEOUT} after {optimize_timeout(options, regions):g} s", kernels)
    if ran.exit_status != 0 or results is None:
        why = optimize_failure(ran.stderr, ran.stdout)
        return failed(f"optimize exited {ran.exit_status}: {why}", kernels)
    if not kernels:
        return failed("nothing optimized: the build recorded no region")
    return AppRun(app.name, run, tuple(kernels), None, time.monotonic() - started, str(work), gpu)


def _unreached(app: str, run: int, root: Path, region: str, why: str) -> KernelRun:
    files = [k.file for k in app_kernels(root) if k.region == region]
    return KernelRun(app, files[0] if files else "", region, run, "error", reasons=(why,))
