"""The build and run filter: a problem stays only if its app builds and, where runs are on, runs
once as nvcc-opt would run it, passing its own checks and printing a time.

Each app is configured and built with real CMake (Ninja) in a scratch folder inside the set
(`SET/.check/<id>/build`), never in the app's own folder; an app without a CMakeLists.txt is
copied there and built with its nvcc-opt.toml's build command. Builds run in parallel over
cores (`jobs`), runs one at a time per GPU (a queue of GPU ids, CUDA_VISIBLE_DEVICES per run).
Each result is kept in `SET/.check/<id>.json`, keyed by a hash of the app folder, the level and
the CMake arguments, so a resumed run does not rebuild what it already judged.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
import tomllib
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar

from pydantic import ValidationError

from nvcc_opt.bench.apps import SuiteError
from nvcc_opt.bench.suite import listed_gpus
from nvcc_opt.config import ConfigError, ProjectConfig, Settings
from nvcc_opt.config.errors import describe, describe_toml_error
from nvcc_opt.paths import CONFIG_NAME
from nvcc_opt.pool.gpu_queue import GpuQueue
from nvcc_opt.verify.measure import Build, check, run_once
from nvcc_opt.workspace.diagnostics import trim_errors
from nvcc_opt.workspace.runner import ProcessRunner, Runner
from nvcc_opt_train.compiled_sources import EXPORT, not_compiled, nvcc_sources
from nvcc_opt_train.problemset import PROBLEMS, Problem, write_atomic

LEVELS = ("none", "build", "run")
CHECK_VERSION = "2"  # 2: a region in a file nvcc does not compile fails the check
CHECK_DIR = ".check"
REASON_CHARS = 300


class AppFailed(Exception):
    """A problem's app did not build or run as required; the message is one line."""


def gpus_here() -> tuple[str, ...]:
    """The GPU ids nvidia-smi lists; () where it is missing or fails (no GPU here)."""
    if shutil.which("nvidia-smi") is None:
        return ()
    try:
        return listed_gpus()
    except SuiteError:
        return ()


def default_cmake_args(gpu: bool) -> tuple[str, ...]:
    """The GPU's own architecture where there is one, else sm_90 (the H200's)."""
    return ("-DCMAKE_CUDA_ARCHITECTURES=native" if gpu else "-DCMAKE_CUDA_ARCHITECTURES=90",)


@dataclass(frozen=True)
class CheckOptions:
    level: str  # none, build, run
    jobs: int  # builds at once
    gpus: tuple[str, ...]  # CUDA_VISIBLE_DEVICES values, one run per GPU at once
    cmake_args: tuple[str, ...]
    max_run_s: float | None = (
        60.0  # a slower run is skipped (benchmark_code runs it dozens of times)
    )


@dataclass(frozen=True)
class Built:
    """An app built in a scratch folder: its configuration (root: where it runs from), and the
    files nvcc compiled (None: not known, for a build CMake did not configure)."""

    config: ProjectConfig
    build_dir: Path
    compiled: frozenset[str] | None = None


def project_config(app: Path) -> ProjectConfig:
    """The app's nvcc-opt.toml, without requiring its own build folder to exist (the scratch
    build replaces it). ConfigError naming the file and line."""
    file = app / CONFIG_NAME
    try:
        text = file.read_text(encoding="utf-8")
        data = tomllib.loads(text)
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(describe_toml_error(file, exc)) from exc
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(file, text, (), exc, Settings)) from exc
    fields = {name: getattr(settings, name) for name in Settings.model_fields}
    return ProjectConfig(root=app.resolve(), file=file, **fields)


def build_app(app: Path, scratch: Path, cmake_args: Sequence[str], parallel: int) -> Built:
    """Configure and build `app` in `scratch` (CMake with Ninja, else a copy built with its own
    command). AppFailed with the first error line."""
    try:
        config = project_config(app)
    except ConfigError as exc:
        raise AppFailed(f"config: {_first(str(exc))}") from exc
    env = {**os.environ, "CMAKE_BUILD_PARALLEL_LEVEL": str(max(1, parallel))}
    for name in ("NVCC_OPT_ACTIVE", "NVCC_OPT_DISABLE"):
        env.pop(name, None)
    if (app / "CMakeLists.txt").is_file():
        build_dir = scratch / "build"
        configure = [
            "cmake", "-S", str(app), "-B", str(build_dir), "-G", "Ninja", EXPORT, *cmake_args
        ]  # fmt: skip
        reused = build_dir.exists()
        try:
            _step("configure", configure, app, env, config.build.timeout_s)
        except AppFailed as exc:
            if not reused or "did not finish" in str(exc):
                raise
            # a folder left by a killed run can hold a half-written CMake cache: once more, clean
            shutil.rmtree(build_dir, ignore_errors=True)
            _step("configure", configure, app, env, config.build.timeout_s)
    else:
        copy = scratch / "tree"
        try:
            shutil.copytree(app, copy, dirs_exist_ok=True, symlinks=True)
        except OSError as exc:
            raise AppFailed(f"copy: {_first(str(exc))}") from exc
        config = config.model_copy(update={"root": copy.resolve()})
        build_dir = config.build_dir
        build_dir.mkdir(parents=True, exist_ok=True)
    try:
        _step("build", config.render_build(build_dir), config.root, env, config.build.timeout_s)
    except AppFailed as exc:  # name the app's files as the problem has them
        raise AppFailed(str(exc).replace(f"{config.root}{os.sep}", "")) from exc
    return Built(config, build_dir, nvcc_sources(build_dir, config.root))


def _step(what: str, argv: list[str], cwd: Path, env: dict[str, str], timeout_s: float) -> None:
    """One configure or build command, its whole process group ended at the timeout."""
    done = ProcessRunner().run(argv, cwd=cwd, env=env, timeout_s=timeout_s, sandbox=False)
    if done.timed_out:
        raise AppFailed(f"{what}: did not finish within {timeout_s:g} s")
    if done.exit_status != 0:
        errors = trim_errors(done.stdout + "\n" + done.stderr, source=None, region_lines=None)
        first = next((line for line in errors.splitlines() if line.strip()), "no output")
        raise AppFailed(f"{what} failed: {_first(first)}")


def run_app(built: Built, gpu: str, runner: Runner, max_s: float | None = None) -> float:
    """One run as nvcc-opt runs it; its time in ms. AppFailed when it times out (its [run]
    timeout_s, or `max_s` when that is shorter: a problem benchmark_code runs dozens of times
    must not take minutes per run), exits non-zero, prints no time, or fails its own checks."""
    config = built.config
    if max_s is not None and max_s < config.run.timeout_s:
        config = config.model_copy(
            update={"run": config.run.model_copy(update={"timeout_s": max_s})}
        )
    completed, output, seconds = run_once(config, runner, Build(built.build_dir), gpu)
    if completed.timed_out:
        if config is not built.config:
            raise AppFailed(f"run: takes longer than {max_s:g} s (--max-run-s): too slow")
        raise AppFailed(f"run: did not finish within [run] timeout_s = {config.run.timeout_s:g} s")
    if completed.exit_status != 0:
        last = _last(output.stderr) or _last(output.stdout) or "no output"
        raise AppFailed(f"run: exited with status {completed.exit_status}: {last}")
    own = check(config, output, None)
    if not own.ok:
        raise AppFailed(f"run: fails its own check: {own.reasons[0] if own.reasons else '?'}")
    if seconds is None:
        raise AppFailed("run: printed no time ([time] matched nothing)")
    return seconds * 1e3


def _first(text: str) -> str:
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line[:REASON_CHARS]


def _last(text: str) -> str:
    lines = [s.strip() for s in text.splitlines() if s.strip()]
    return lines[-1][:REASON_CHARS] if lines else ""


def app_hash(app: Path) -> str:
    """sha256 over the app folder's files (relative path and bytes), sorted."""
    digest = hashlib.sha256()
    for path in sorted(p for p in app.rglob("*") if p.is_file()):
        digest.update(path.relative_to(app).as_posix().encode() + b"\x00")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def untagged_hash(app: Path) -> str:
    """`app_hash` with the `@optimize` tag lines left out: the problems one benchmark gives (each
    kernel, each pair) differ only in their tags, so they build and run the same code."""
    digest = hashlib.sha256()
    for path in sorted(p for p in app.rglob("*") if p.is_file()):
        kept = b"".join(
            line
            for line in path.read_bytes().splitlines(keepends=True)
            if not line.lstrip().startswith(b"// @optimize")
        )
        digest.update(path.relative_to(app).as_posix().encode() + b"\x00")
        digest.update(hashlib.sha256(kept).digest())
    return digest.hexdigest()


T = TypeVar("T")


def build_then_run(
    problems: Sequence[Problem],
    build: Callable[[Problem], Built],
    run: Callable[[Problem, Built, str], T] | None,
    jobs: int,
    gpus: Sequence[str],
) -> Iterator[tuple[Problem, Built | T | AppFailed]]:
    """Each problem built (`jobs` builds at once) and then, with `run`, run on a GPU of its own
    (one run per GPU at once, `run` gets the GPU id): (problem, what the last step returned, or
    the AppFailed it raised), in the order they finish. Builds never wait for a GPU."""
    free: GpuQueue[str] = GpuQueue(gpus or ("0",))

    def on_a_gpu(problem: Problem, built: Built) -> T:
        assert run is not None
        with free.taken() as gpu:  # one worker per GPU: one is always free here
            return run(problem, built, gpu)

    builds = ThreadPoolExecutor(max(1, jobs))
    runs = ThreadPoolExecutor(free.size)
    waiting: dict[Future[Any], Problem] = {builds.submit(build, p): p for p in problems}
    finished = False
    try:
        while waiting:
            done, _ = wait(waiting, return_when=FIRST_COMPLETED)
            for future in done:
                problem = waiting.pop(future)
                try:
                    value = future.result()
                except AppFailed as exc:
                    yield problem, exc
                    continue
                except (OSError, ValueError) as exc:  # one odd app does not stop the others
                    yield problem, AppFailed(f"error: {_first(f'{type(exc).__name__}: {exc}')}")
                    continue
                if run is not None and isinstance(value, Built):
                    waiting[runs.submit(on_a_gpu, problem, value)] = problem
                else:
                    yield problem, value
        finished = True
    finally:
        # Stopped early (Ctrl-C, the caller gone): start nothing more and return at once; the
        # builds and runs in flight end by themselves (their timeouts bound them).
        for pool in (builds, runs):
            pool.shutdown(wait=finished, cancel_futures=True)


def check_problems(
    root: Path, problems: Sequence[Problem], options: CheckOptions, say: Callable[[str], None]
) -> Iterator[tuple[Problem, str | None]]:
    """(problem, None) for each problem that passes the check at `options.level`, (problem, why)
    for each that does not; cached results first, then in the order they finish."""
    if options.level == "none":
        yield from ((p, None) for p in problems)
        return
    shared = shared_key(root)
    pending = []
    for problem in problems:
        cached = _cached(root, problem, options, shared)
        if cached is None:
            pending.append(problem)
        else:
            yield problem, cached or None
    parallel = max(1, (os.cpu_count() or 1) // max(1, options.jobs))

    compiled: dict[str, frozenset[str] | None] = {}  # by the id of a group's first problem

    def build(problem: Problem) -> Built:
        scratch = root / CHECK_DIR / problem.id
        # a check that was not recorded starts clean: a run killed mid-configure leaves a
        # half-written CMake cache that would fail every later configure
        shutil.rmtree(scratch, ignore_errors=True)
        built = build_app(root / problem.app, scratch, options.cmake_args, parallel)
        compiled[problem.id] = built.compiled
        return built

    def run(problem: Problem, built: Built, gpu: str) -> float:
        return run_app(built, gpu, ProcessRunner(), options.max_run_s)

    same_code: dict[str, list[Problem]] = {}  # one build and run for the problems of one code
    for problem in pending:
        same_code.setdefault(untagged_hash(root / problem.app), []).append(problem)
    checked = build_then_run(
        [group[0] for group in same_code.values()],
        build,
        run if options.level == "run" else None,
        options.jobs,
        options.gpus,
    )
    by_first = {group[0].id: group for group in same_code.values()}
    for first, outcome in checked:
        failed = str(outcome) if isinstance(outcome, AppFailed) else None
        for problem in by_first[first.id]:
            why = failed or not_compiled(problem.regions, compiled.get(first.id))
            if why is not None:
                say(f"{problem.id}: {why}")
            elif isinstance(outcome, float):
                say(f"{problem.id}: builds, runs and passes ({outcome:.3g} ms)")
            else:
                say(f"{problem.id}: builds")
            _store(root, problem, options, shared, why)
            yield problem, why


def shared_key(root: Path) -> str:
    """A hash of the set's shared folders (problems/ folders that are not apps, such as the
    suite's common/): what apps include from beside them is part of what a check judged."""
    folder = root / PROBLEMS
    return _hash_all(
        shared
        for shared in (sorted(folder.iterdir()) if folder.is_dir() else ())
        if shared.is_dir() and not (shared / CONFIG_NAME).is_file()
    )


def _hash_all(folders: Iterable[Path]) -> str:
    return hashlib.sha256("\x00".join(app_hash(f) for f in folders).encode()).hexdigest()


def _cache_key(root: Path, problem: Problem, options: CheckOptions, shared: str) -> str:
    parts = [CHECK_VERSION, app_hash(root / problem.app), shared, options.level]
    parts += options.cmake_args
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()


def _cached(root: Path, problem: Problem, options: CheckOptions, shared: str) -> str | None:
    """The cached verdict ("" for a pass, else the reason), or None when there is none for this
    app's content, level and CMake arguments."""
    path = root / CHECK_DIR / f"{problem.id}.json"
    try:
        row = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(row, dict) or row.get("key") != _cache_key(root, problem, options, shared):
        return None
    return str(row.get("reason") or "")


def _store(
    root: Path, problem: Problem, options: CheckOptions, shared: str, why: str | None
) -> None:
    row = {
        "id": problem.id,
        "key": _cache_key(root, problem, options, shared),
        "level": options.level,
        "ok": why is None,
        "reason": why or "",
        "at": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
    }
    write_atomic(root / CHECK_DIR / f"{problem.id}.json", json.dumps(row, sort_keys=True) + "\n")
