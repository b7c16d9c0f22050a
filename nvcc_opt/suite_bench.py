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

This module runs things and reads what they left (optimize's JSON, the traces); the rows, the
summary and the files are `suite_report`'s.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
import tomllib
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nvcc_opt.agent.trace import TraceError, load_trace
from nvcc_opt.config import ConfigError, load
from nvcc_opt.config.model import Settings
from nvcc_opt.paths import CONFIG_NAME
from nvcc_opt.regions.scan import scan
from nvcc_opt.suite_report import (
    INTERRUPTED,
    PROPOSED,
    REASON_CHARS,
    AppRun,
    Kernel,
    KernelRun,
    Report,
    Tried,
    classify,
    failed_runs,
    first_line,
    free_stem,
    model_slug,
    rows_for,
    short_reason,
    summarize,
)
from nvcc_opt.tools.bench import Measured, read_benchmark

GRACE_S = 30.0  # after SIGINT at a timeout, before SIGKILL: optimize prints what it verified
TIMEOUT = "timeout"  # a run's stop reason when the bench's --timeout ended it
POLL_S = 0.2  # how often a run in flight looks whether the bench was interrupted
GPU_QUERY = ("nvidia-smi", "--query-gpu=index", "--format=csv,noheader")
_CANNOT = re.compile(r"^\[(?P<region>[^\]\s]+)(?: gpu [^\]]*)?\] cannot optimize: (?P<why>.*)$")


class SuiteError(RuntimeError):
    """The bench cannot start: no suite folder, no apps, an unknown --only name, bad --gpus."""


@dataclass(frozen=True)
class Options:
    suite: Path
    spec: str
    out: Path
    runs: int = 1
    only: tuple[str, ...] = ()
    time_s: float | None = None
    turns: int | None = None
    cmake_args: tuple[str, ...] = ()
    timeout_s: float | None = None  # per optimize call; default from the regions and --time
    launcher: str = "nvcc-opt"
    command_line: str = ""
    gpus: tuple[str, ...] = ()  # one app run per GPU at once; (): one at a time, env untouched
    start_within_s: float | None = None  # no run starts later than this after the bench began
    optimize_args: tuple[str, ...] = ()  # added to every optimize call (e.g. --parity, --tools)
    seed_per_app: bool = False  # optimize's --seed from the app's name and the run (run_seed)


# --- --gpus ---------------------------------------------------------------------------------


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


# --- parsing optimize's output -------------------------------------------------------------


def parse_optimize_output(stdout: str) -> tuple[list[dict[str, Any]] | None, dict[str, str]]:
    """(the JSON list printed after the progress lines or None, region -> why it could not be
    optimized)."""
    cannot: dict[str, str] = {}
    lines = stdout.splitlines()
    for line in lines:
        found = _CANNOT.match(line)
        if found:
            cannot[found["region"]] = found["why"]
    for i, line in enumerate(lines):
        if line in ("[", "[]"):
            try:
                data = json.loads("\n".join(lines[i:]))
            except json.JSONDecodeError:
                continue
            if isinstance(data, list) and all(isinstance(d, dict) for d in data):
                return data, cannot
    return None, cannot


def relative_to(path: str, root: Path) -> str:
    """`path` relative to `root` when it lies under it (resolved), else as given."""
    try:
        return Path(path).resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


def kernel_runs(
    app: str, run: int, results: Sequence[dict[str, Any]], root: Path, base: Path
) -> list[KernelRun]:
    """optimize's RegionResult dicts as KernelRuns, each with what its trace says was tried (the
    trace's path written relative to the report's work folder `base`, as traces.tar.gz holds
    it)."""
    found = []
    for d in results:
        status = str(d.get("status", ""))
        reasons = tuple(str(r) for r in d.get("reasons") or ())
        baseline = d.get("baseline_ms")
        wall = d.get("wall_s")
        trace = str(d.get("trace") or "")
        tried, unreadable = read_tried(Path(trace), run) if trace else ((), "no trace path")
        found.append(
            KernelRun(
                app=app,
                file=relative_to(str(d.get("file", "")), root),
                region=str(d.get("region", "")),
                run=run,
                status=status,
                speedup=float(d.get("speedup") or 1.0) if status == PROPOSED else 1.0,
                baseline_ms=float(baseline) if isinstance(baseline, int | float) else None,
                wall_s=float(wall) if isinstance(wall, int | float) else None,
                stopped=str(d.get("stopped", "")),
                reasons=reasons,
                explanation=str(d.get("explanation") or ""),
                change=str(d.get("change") or ""),
                outcome=classify(status, reasons),
                trace=relative_to(trace, base) if trace else "",
                tried=tried,
                trace_error=unreadable,
            )
        )
    return found


def read_tried(path: Path, run: int) -> tuple[tuple[Tried, ...], str]:
    """Every benchmark_code call in the trace at `path`, in order, and "" ; or nothing and why
    the trace cannot be read (a report says so rather than failing)."""
    try:
        steps = load_trace(path).steps
        tried = tuple(
            _tried(step, call, run)
            for step in steps
            for call in step.get("calls") or ()
            if call.get("name") == "benchmark_code"
        )
    except TraceError as exc:
        return (), first_line(str(exc), REASON_CHARS)
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        return (), first_line(
            f"{path}: malformed trace ({type(exc).__name__}: {exc})", REASON_CHARS
        )
    return tried, ""


def _tried(step: dict[str, Any], call: dict[str, Any], run: int) -> Tried:
    """One benchmark_code call: the text the model sent with it, its compile_args, and the
    observation read back by benchmark_code's own reader."""
    arguments = call.get("arguments")
    if isinstance(arguments, str):
        try:
            arguments = json.loads(arguments)
        except json.JSONDecodeError:
            arguments = None
    flags = arguments.get("compile_args") if isinstance(arguments, dict) else None
    result = call.get("result")
    measured = (
        read_benchmark(result)
        if isinstance(result, str)
        else Measured("unfinished", 1.0, "the call did not return (the run was stopped)")
    )
    return Tried(
        run=run,
        what=first_line(str(step.get("text") or "")),
        compile_args=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
        verdict=measured.verdict,
        speedup=measured.speedup,
        why=measured.why,
    )


# --- I/O: apps, builds, runs ---------------------------------------------------------------


def find_apps(suite: Path, only: Sequence[str] = ()) -> list[Path]:
    """The suite's apps (folders with nvcc-opt.toml and CMakeLists.txt), sorted by name, or the
    ones `only` names in its order (a time-limited slice runs the most wanted first). SuiteError
    when there is no suite, no app, or an unknown name."""
    if not suite.is_dir():
        raise SuiteError(f"{suite}: no such suite folder")
    apps = sorted(
        p
        for p in suite.iterdir()
        if p.is_dir() and (p / CONFIG_NAME).is_file() and (p / "CMakeLists.txt").is_file()
    )
    if only:
        names = {p.name for p in apps}
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SuiteError(
                f"--only: no app named {', '.join(unknown)} in {suite} "
                f"(apps: {', '.join(sorted(names)) or 'none'})"
            )
        by_name = {p.name: p for p in apps}
        apps = [by_name[name] for name in dict.fromkeys(only)]
    if not apps:
        raise SuiteError(f"{suite}: no apps (folders with {CONFIG_NAME} and CMakeLists.txt)")
    return apps


def shared_folders(suite: Path) -> list[Path]:
    """The suite's folders that are not apps (headers the apps share): each run's copy of an
    app gets them beside it, so paths like `../common` resolve as in the suite."""
    return sorted(
        p
        for p in suite.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not (p / CONFIG_NAME).is_file()
    )


def app_kernels(app: Path, skip: str | None = None) -> list[Kernel]:
    """The tagged regions of the app's .cu files (not under its build folder `skip`)."""
    found = []
    skip_dir = (app / skip).resolve() if skip else None
    for path in sorted(app.rglob("*.cu")):
        if skip_dir is not None and path.resolve().is_relative_to(skip_dir):
            continue
        try:
            spans = scan(path.read_bytes()).regions
        except OSError:
            continue
        rel = path.relative_to(app).as_posix()
        found += [Kernel(app.name, rel, span.name) for span in spans]
    return found


def build_dir_name(app: Path) -> str:
    """`[build] dir` of the app's nvcc-opt.toml. ConfigError when the file is not valid."""
    file = app / CONFIG_NAME
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
        return Settings.model_validate(data).build.dir
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"{file}: {first_line(str(exc), REASON_CHARS)}") from exc


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


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool
    stopped: bool = False  # the bench was interrupted (`stop` set) while it ran


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    on_line: Callable[[str], None] = lambda _: None,
    stop: threading.Event | None = None,
) -> Ran:
    """Run argv in its own session, passing each stdout line to `on_line`. At the timeout, or
    when `stop` is set (the bench was interrupted), the group gets SIGINT (optimize then prints
    what it verified so far), SIGKILL after GRACE_S."""
    with subprocess.Popen(
        list(argv),
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        errors="replace",
        start_new_session=True,
    ) as proc:
        out: list[str] = []
        err: list[str] = []
        assert proc.stdout is not None and proc.stderr is not None
        stdout, stderr = proc.stdout, proc.stderr

        def read_out() -> None:
            for line in stdout:
                out.append(line)
                on_line(line.rstrip("\n"))

        readers = [
            threading.Thread(target=read_out, daemon=True),
            threading.Thread(target=lambda: err.extend(stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        why = ""
        try:
            why = _wait(proc, timeout_s, stop)
            if why:
                _signal_group(proc.pid, signal.SIGINT)
            try:
                proc.wait(timeout=GRACE_S)
            except subprocess.TimeoutExpired:
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        finally:
            if proc.poll() is None:  # interrupted ourselves: leave nothing running
                _signal_group(proc.pid, signal.SIGKILL)
                proc.wait()
        for reader in readers:
            reader.join(timeout=10)
        return Ran(
            proc.returncode, "".join(out), "".join(err), why == "timeout", why == INTERRUPTED
        )


def _wait(proc: subprocess.Popen[str], timeout_s: float, stop: threading.Event | None) -> str:
    """Why proc must be stopped: "timeout", INTERRUPTED once `stop` is set; "" once it ended."""
    deadline = time.monotonic() + timeout_s
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return "timeout"
        if stop is not None and stop.is_set():
            return INTERRUPTED
        try:
            proc.wait(timeout=left if stop is None else min(left, POLL_S))
            return ""
        except subprocess.TimeoutExpired:
            continue


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


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
    done = _run_quiet(configure, root, env, 600.0)
    if stopped():  # Ctrl-C reaches configure and build too (same process group)
        return failed(INTERRUPTED)
    if done is not None:
        return failed(f"configure failed: {done}")
    try:
        config = load(root)
    except ConfigError as exc:
        return failed(f"config: {first_line(str(exc), REASON_CHARS)}")
    say("building")
    done = _run_quiet(config.render_build(config.build_dir), root, env, config.build.timeout_s)
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
        on_line=_until_json(say),
        stop=stop,
    )
    results, cannot = parse_optimize_output(ran.stdout)
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
    if ran.returncode != 0 or results is None:
        why = short_reason(ran.stderr or ran.stdout)
        return failed(f"optimize exited {ran.returncode}: {why}", kernels)
    if not kernels:
        return failed("nothing optimized: the build recorded no region")
    return AppRun(app.name, run, tuple(kernels), None, time.monotonic() - started, str(work), gpu)


def _until_json(say: Callable[[str], None]) -> Callable[[str], None]:
    """`say` for the progress lines, silent from the JSON list on (it goes to the report)."""
    done = False

    def on_line(line: str) -> None:
        nonlocal done
        done = done or line in ("[", "[]")
        if not done:
            say(line)

    return on_line


def _unreached(app: str, run: int, root: Path, region: str, why: str) -> KernelRun:
    files = [k.file for k in app_kernels(root) if k.region == region]
    return KernelRun(app, files[0] if files else "", region, run, "error", reasons=(why,))


def _run_quiet(argv: Sequence[str], cwd: Path, env: dict[str, str], timeout_s: float) -> str | None:
    """None when argv succeeded, else a short reason."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout_s,
        )
    except subprocess.TimeoutExpired:
        return f"timed out after {timeout_s:g} s"
    except OSError as exc:
        return str(exc)
    if done.returncode == 0:
        return None
    return short_reason(done.stderr + "\n" + done.stdout)


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


def scanned_kernels(app: Path) -> list[Kernel]:
    """The app's tagged regions outside its build folder (all of them when its configuration
    cannot be read: the run then fails and names why)."""
    try:
        return app_kernels(app, build_dir_name(app))
    except ConfigError:
        return app_kernels(app)


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
    free: queue.Queue[str | None] = queue.Queue()
    for gpu in options.gpus or (None,):
        free.put(gpu)
    stop = threading.Event()
    began = time.monotonic()
    within = options.start_within_s

    def on_a_free_gpu(app: Path, run: int) -> AppRun | None:
        if stop.is_set():
            return None
        gpu = free.get()
        if within is not None and time.monotonic() - began > within:
            free.put(gpu)
            return None  # too late to begin: the report lists the app as not started
        try:
            say = _prefixed(echo, f"[{app.name} run {run}/{options.runs}]")
            result = run_app(app, run, options, base, say, gpu, stop)
            if on_done is not None:
                on_done(app, run, result)
            return result
        finally:
            free.put(gpu)

    with ThreadPoolExecutor(max_workers=free.qsize(), thread_name_prefix="bench") as pool:
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
