"""`nvcc-opt bench suite`: optimize every kernel of the suite N times and write a results table.

Each run of an app works on a private copy of it (`<out>/work/<report>/<app>/run-<i>/`, with the
suite's shared folders such as `common/` beside it): a fresh build tree configured with nvcc-opt
as the CUDA launcher, a fresh store (`NVCC_OPT_STORE`), then `nvcc-opt optimize --json --seed i`
as a subprocess. Neither the suite's folders nor the user's
store are touched. An app that fails (configure, build, optimize crash, timeout) becomes rows with
an "error: ..." verdict and the bench goes on.

A kernel is one tagged region of an app (found by scanning its .cu files, so a region that was
never optimized still counts). Its best verified speedup is the best proposed rewrite's over the
runs; a kept original (or an error) counts as 1.0. "Improved" means a proposed rewrite at least
`IMPROVED_AT` faster: only a significant speedup is ever proposed (see verify/stats.py). A "wrong
final" is a final answer the independent verification rejected as incorrect (`WRONG_CODES`): a
build failure, a guard or "no improvement" is not wrong.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import shlex
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import threading
import time
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nvcc_opt.config import ConfigError, load
from nvcc_opt.config.model import Settings
from nvcc_opt.paths import CONFIG_NAME
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store, StoreError

IMPROVED_AT = 1.05
TARGET_SHARE = 0.60
TARGET_WALL_S = 300.0
PROPOSED = "proposed"  # RegionResult.status values (nvcc_opt.optimize; not imported: heavy)
KEPT = "original kept"
# Reason codes (the word before ":") that mean the final answer was incorrect: verify/checks.py's
# check failures, then verify/final.py's fresh inputs and sanitizer findings.
WRONG_CODES = frozenset(
    {
        "timed_out", "exit_status", "missing", "forbidden", "numbers_none", "numbers_count",
        "numbers_differ", "nonfinite", "zeros", "file_missing", "file_text_differs",
        "file_differs", "check_failed", "fresh_inputs", "sanitizer_memcheck",
        "sanitizer_racecheck",
    }
)  # fmt: skip
APP_ROW = "(app)"  # the row of an app without a tagged region found
REASON_CHARS = 160
CHANGED_CHARS = 100
GRACE_S = 30.0  # after SIGINT at a timeout, before SIGKILL: optimize prints what it verified
_CODE = re.compile(r"^\s*([A-Za-z_]+)")
_CANNOT = re.compile(r"^\[(?P<region>[^\]\s]+)(?: gpu [^\]]*)?\] cannot optimize: (?P<why>.*)$")


class SuiteError(RuntimeError):
    """The bench cannot start: no suite folder, no apps, an unknown --only name."""


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


@dataclass(frozen=True)
class Kernel:
    """One tagged region of an app; `file` is relative to the app folder."""

    app: str
    file: str
    region: str


@dataclass(frozen=True)
class KernelRun:
    """One region's result in one run (a RegionResult, plus the rewrite's explanation)."""

    app: str
    file: str
    region: str
    run: int
    status: str  # PROPOSED, KEPT or "error"
    speedup: float = 1.0
    baseline_ms: float | None = None
    wall_s: float | None = None
    stopped: str = ""
    reasons: tuple[str, ...] = ()
    explanation: str = ""
    outcome: str = ""  # classify()


@dataclass(frozen=True)
class AppRun:
    app: str
    run: int
    kernels: tuple[KernelRun, ...]
    error: str | None  # "configure failed: ...", None when optimize ran to the end
    wall_s: float
    work: str


@dataclass(frozen=True)
class KernelRow:
    app: str
    file: str
    region: str
    baseline_ms: float | None
    best_speedup: float
    improved: bool
    changed: str
    wall_s: float | None  # median over the runs that reached the region
    verdict: str
    runs: int
    proposed: int
    wrong_finals: int
    errors: int


@dataclass(frozen=True)
class Overall:
    kernels: int
    improved: int
    share_improved: float
    geomean_speedup: float
    wrong_finals: int
    median_wall_s: float | None
    failed_runs: int
    targets: dict[str, bool]


@dataclass(frozen=True)
class Report:
    model: str
    date: str
    started_at: str
    command: str
    machine: dict[str, str]
    options: dict[str, Any]
    rows: tuple[KernelRow, ...]
    overall: Overall
    runs: tuple[AppRun, ...] = field(default=())
    wall_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


# --- pure: classification and summary ------------------------------------------------------


def reason_code(reason: str) -> str:
    """The word a reason starts with ("fresh_inputs --seed 9: ..." -> "fresh_inputs")."""
    found = _CODE.match(reason)
    return found.group(1) if found else ""


def is_wrong(reasons: Iterable[str]) -> bool:
    """Whether the verification rejected the final answer as incorrect."""
    return any(reason_code(r) in WRONG_CODES for r in reasons)


def classify(status: str, reasons: Sequence[str]) -> str:
    """What became of one final answer: proposed, wrong final, guard, build failed, held for
    review, no answer, no improvement, or error."""
    if status == PROPOSED:
        return "proposed"
    if status != KEPT:
        return "error"
    codes = [reason_code(r) for r in reasons]
    if is_wrong(reasons):
        return "wrong final"
    if any(c.startswith("guard_") for c in codes):
        return "guard"
    if "build_failed" in codes:
        return "build failed"
    if "ceiling" in codes:
        return "held for review"
    if any(r.startswith("no final answer") for r in reasons):
        return "no answer"
    return "no improvement"


def geomean(values: Sequence[float]) -> float:
    """Geometric mean; 1.0 for none (nothing improved, nothing lost)."""
    if not values:
        return 1.0
    if any(v <= 0 for v in values):
        raise ValueError("geometric mean of a non-positive value")
    return math.exp(sum(math.log(v) for v in values) / len(values))


def first_line(text: str, limit: int = CHANGED_CHARS) -> str:
    """The first non-blank line, trimmed to `limit` characters with an ellipsis."""
    line = next((s.strip() for s in text.splitlines() if s.strip()), "")
    return line if len(line) <= limit else line[: limit - 3].rstrip() + "..."


def short_reason(log: str, limit: int = REASON_CHARS) -> str:
    """The first line naming an error (with the next line when it ends in ":", as CMake's
    "CMake Error at CMakeLists.txt:3 (message):" does), else the last line of a log."""
    lines = [s.strip() for s in log.splitlines() if s.strip()]
    if not lines:
        return "(no output)"
    at = next((i for i, s in enumerate(lines) if "error" in s.lower()), None)
    if at is None:
        return first_line(lines[-1], limit)
    line = lines[at]
    if line.endswith(":") and at + 1 < len(lines):
        line += " " + lines[at + 1]
    return first_line(line, limit)


def summarize_kernel(kernel: Kernel, runs: Sequence[KernelRun], n_runs: int) -> KernelRow:
    """One row of the table from this kernel's results over the runs."""
    done = [r for r in runs if r.status != "error"]
    failed = [r for r in runs if r.status == "error"]
    proposed = [r for r in done if r.status == PROPOSED]
    best = max(proposed, key=lambda r: r.speedup, default=None)
    speedup = best.speedup if best is not None else 1.0
    improved = speedup >= IMPROVED_AT
    wrong = sum(1 for r in done if r.outcome == "wrong final")
    walls = [r.wall_s for r in done if r.wall_s is not None]
    baselines = [r.baseline_ms for r in runs if r.baseline_ms is not None]
    if improved:
        verdict = "improved"
    elif best is not None:
        verdict = f"proposed, below {IMPROVED_AT - 1:.0%}"
    elif done:
        verdict = "kept: " + ", ".join(dict.fromkeys(_outcome(r) for r in done))
    else:
        why = failed[0].reasons[0] if failed and failed[0].reasons else "not run"
        verdict = f"error: {why}"
    if wrong and "wrong final" not in verdict:
        verdict += f" ({wrong} wrong final{'s' if wrong > 1 else ''})"
    if failed and done:
        why = failed[0].reasons[0] if failed[0].reasons else "failed"
        verdict += f" ({len(failed)} of {n_runs} runs failed: {why})"
    return KernelRow(
        app=kernel.app,
        file=kernel.file,
        region=kernel.region,
        baseline_ms=statistics.median(baselines) if baselines else None,
        best_speedup=speedup,
        improved=improved,
        changed=first_line(best.explanation) if best is not None else "",
        wall_s=statistics.median(walls) if walls else None,
        verdict=verdict,
        runs=n_runs,
        proposed=len(proposed),
        wrong_finals=wrong,
        errors=len(failed),
    )


def _outcome(run: KernelRun) -> str:
    """The outcome, with the reason's code where it says what was wrong ("wrong final
    (numbers_differ)")."""
    if run.outcome == "no answer" and run.stopped:
        return f"no answer ({run.stopped})"
    if run.outcome not in ("wrong final", "guard", "build failed"):
        return run.outcome
    codes = [reason_code(r) for r in run.reasons]
    code = next((c for c in codes if c in WRONG_CODES or c.startswith("guard_")), "")
    return f"{run.outcome} ({code})" if code and code != run.outcome else run.outcome


def summarize(rows: Sequence[KernelRow], failed_runs: int = 0) -> Overall:
    """The share improved, the geometric mean speedup (kept = 1.0), wrong finals, the median
    wall time per kernel, and whether the targets are met."""
    improved = sum(1 for r in rows if r.improved)
    share = improved / len(rows) if rows else 0.0
    walls = [r.wall_s for r in rows if r.wall_s is not None]
    median_wall = statistics.median(walls) if walls else None
    wrong = sum(r.wrong_finals for r in rows)
    targets = {
        f"improved share >= {TARGET_SHARE:.0%}": bool(rows) and share >= TARGET_SHARE,
        f"median wall time per kernel <= {TARGET_WALL_S:g} s": (
            median_wall is not None and median_wall <= TARGET_WALL_S
        ),
        "no wrong finals": wrong == 0,
    }
    return Overall(
        kernels=len(rows),
        improved=improved,
        share_improved=share,
        geomean_speedup=geomean([r.best_speedup for r in rows]),
        wrong_finals=wrong,
        median_wall_s=median_wall,
        failed_runs=failed_runs,
        targets=targets,
    )


def rows_for(kernels: Sequence[Kernel], runs: Sequence[AppRun], n_runs: int) -> list[KernelRow]:
    """A row per kernel (the scanned ones first, in order, then any a run named that the scan
    did not find); an app run that failed counts as an error for each of its kernels it did not
    reach."""
    order = list(kernels)
    for app_run in runs:
        for k in app_run.kernels:
            key = Kernel(k.app, k.file, k.region)
            if key not in order:
                order.append(key)
        if not any(key.app == app_run.app for key in order):  # nothing tagged was found
            order.append(Kernel(app_run.app, "", APP_ROW))
    by_kernel: dict[Kernel, list[KernelRun]] = {k: [] for k in order}
    for app_run in runs:
        reached = set()
        for k in app_run.kernels:
            key = Kernel(k.app, k.file, k.region)
            by_kernel[key].append(k)
            reached.add(key)
        for key in order:
            if key.app == app_run.app and key not in reached:
                why = app_run.error or "not optimized: the build did not record this region"
                by_kernel[key].append(KernelRun(key.app, key.file, key.region, app_run.run,
                                                "error", reasons=(why,)))  # fmt: skip
    return [summarize_kernel(k, by_kernel[k], n_runs) for k in order]


def model_slug(spec: str) -> str:
    """A file-name-safe name for a model spec, without its URL ("openai:org/M@http://..." ->
    "openai-M")."""
    head = spec.split("@", 1)[0].split("?", 1)[0]
    kind, _, rest = head.partition(":")
    rest = rest.split("#", 1)[0].rstrip("/").rsplit("/", 1)[-1]
    slug = re.sub(r"[^A-Za-z0-9._-]+", "-", f"{kind}-{rest}" if rest else kind).strip("-.")
    return slug or "model"


def _cell(value: object) -> str:
    text = "" if value is None else str(value)
    return text.replace("|", "\\|").replace("\n", " ")


def _num(value: float | None, digits: int = 2, suffix: str = "") -> str:
    return "-" if value is None else f"{value:.{digits}f}{suffix}"


def render_markdown(report: Report) -> str:
    """The table and the overall numbers, as Markdown."""
    o = report.overall
    lines = [
        f"# nvcc-opt bench suite: {report.model}",
        "",
        f"- date: {report.started_at}",
        f"- command: `{report.command}`",
        f"- machine: {', '.join(f'{k}: {v}' for k, v in report.machine.items())}",
        f"- runs per app: {report.options.get('runs', 1)}; total wall time {report.wall_s:.0f} s",
        "",
        "| app | kernel | baseline ms | best speedup | improved | what changed | wall s "
        "| verdict |",
        "|---|---|---:|---:|---|---|---:|---|",
    ]
    for r in report.rows:
        cells = [
            r.app, r.region, _num(r.baseline_ms, 3), _num(r.best_speedup, 3, "x"),
            "yes" if r.improved else "no", r.changed, _num(r.wall_s, 1), r.verdict,
        ]  # fmt: skip
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    met = ", ".join(f"{name}: {'met' if ok else 'NOT met'}" for name, ok in o.targets.items())
    lines += [
        "",
        f"**Overall**: {o.improved} of {o.kernels} kernels improved by >= "
        f"{IMPROVED_AT - 1:.0%} with significance ({o.share_improved:.1%}); geometric mean "
        f"speedup {o.geomean_speedup:.3f}x (original kept = 1.0); wrong finals: "
        f"{o.wrong_finals}; median wall time per kernel: {_num(o.median_wall_s, 1, ' s')}; "
        f"failed app runs: {o.failed_runs}.",
        "",
        f"Targets: {met}.",
        "",
    ]
    return "\n".join(lines)


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
    app: str,
    run: int,
    results: Sequence[dict[str, Any]],
    root: Path,
    explanations: dict[int, str],
) -> list[KernelRun]:
    """optimize's RegionResult dicts as KernelRuns."""
    found = []
    for d in results:
        status = str(d.get("status", ""))
        reasons = tuple(str(r) for r in d.get("reasons") or ())
        stopped = str(d.get("stopped", ""))
        rewrite_id = d.get("rewrite_id")
        baseline = d.get("baseline_ms")
        wall = d.get("wall_s")
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
                stopped=stopped,
                reasons=reasons,
                explanation=explanations.get(rewrite_id, "") if isinstance(rewrite_id, int) else "",
                outcome=classify(status, reasons),
            )
        )
    return found


# --- I/O: apps, builds, runs ---------------------------------------------------------------


def find_apps(suite: Path, only: Sequence[str] = ()) -> list[Path]:
    """The suite's apps (folders with nvcc-opt.toml and CMakeLists.txt), sorted by name,
    filtered by `only`. SuiteError when there is no suite, no app, or an unknown name."""
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
        apps = [p for p in apps if p.name in only]
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


def bench_env(store: Path) -> dict[str, str]:
    """The environment of every step: a fresh store; the launcher on (a recursion guard or
    NVCC_OPT_DISABLE inherited from the caller would make it pass through and record nothing)."""
    env = {k: v for k, v in os.environ.items() if k not in ("NVCC_OPT_ACTIVE", "NVCC_OPT_DISABLE")}
    env["NVCC_OPT_STORE"] = str(store)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@dataclass(frozen=True)
class Ran:
    returncode: int
    stdout: str
    stderr: str
    timed_out: bool


def run_streaming(
    argv: Sequence[str],
    *,
    cwd: Path,
    env: dict[str, str],
    timeout_s: float,
    on_line: Callable[[str], None] = lambda _: None,
) -> Ran:
    """Run argv in its own session, passing each stdout line to `on_line`. At the timeout the
    group gets SIGINT (optimize then prints what it verified so far), SIGKILL after GRACE_S."""
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
        timed_out = False
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            timed_out = True
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
        return Ran(proc.returncode, "".join(out), "".join(err), timed_out)


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


def optimize_argv(options: Options, run: int) -> list[str]:
    argv = [options.launcher, "optimize", "--model", options.spec, "--json", "--seed", str(run)]
    if options.time_s is not None:
        argv += ["--time", f"{options.time_s:g}"]
    if options.turns is not None:
        argv += ["--turns", str(options.turns)]
    return argv


def optimize_timeout(options: Options, regions: int) -> float:
    """Per optimize call: --timeout, else per region the agent's time (default 3600 s) plus 900 s
    for the baseline and the final verification."""
    if options.timeout_s is not None:
        return options.timeout_s
    return max(1, regions) * ((options.time_s if options.time_s is not None else 3600.0) + 900.0)


def explanations(store: Path, ids: Iterable[int]) -> dict[int, str]:
    """The stored explanation of each rewrite id ("" when it cannot be read)."""
    wanted = set(ids)
    if not wanted or not store.is_file():
        return {}
    try:
        with Store.open(store) as opened:
            return {r.id: r.explanation for r in opened.rewrites() if r.id in wanted}
    except StoreError:
        return {}


def run_app(
    app: Path, run: int, options: Options, work: Path, say: Callable[[str], None]
) -> AppRun:
    """One run of one app in `work` (a copy, its build tree, its store). Never raises for the
    app's own failures: they become `error`."""
    started = time.monotonic()
    work.mkdir(parents=True, exist_ok=True)

    def failed(why: str, kernels: Sequence[KernelRun] = ()) -> AppRun:
        say(f"error: {why}")
        return AppRun(app.name, run, tuple(kernels), why, time.monotonic() - started, str(work))

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
    env = bench_env(store)
    build = root / build_name
    configure = [
        "cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
        f"-DCMAKE_CUDA_COMPILER_LAUNCHER={options.launcher}", *options.cmake_args,
    ]  # fmt: skip
    say("configuring")
    done = _run_quiet(configure, root, env, 600.0)
    if done is not None:
        return failed(f"configure failed: {done}")
    try:
        config = load(root)
    except ConfigError as exc:
        return failed(f"config: {first_line(str(exc), REASON_CHARS)}")
    say("building")
    done = _run_quiet(config.render_build(config.build_dir), root, env, config.build.timeout_s)
    if done is not None:
        return failed(f"build failed: {done}")
    regions = len(app_kernels(root, build_name))
    say("optimizing")
    ran = run_streaming(
        optimize_argv(options, run),
        cwd=root,
        env=env,
        timeout_s=optimize_timeout(options, regions),
        on_line=_until_json(say),
    )
    results, cannot = parse_optimize_output(ran.stdout)
    ids = [d["rewrite_id"] for d in results or () if isinstance(d.get("rewrite_id"), int)]
    kernels = kernel_runs(app.name, run, results or (), root, explanations(store, ids))
    reached = {k.region for k in kernels}
    for region, why in cannot.items():
        if region not in reached:
            kernels.append(_unreached(app.name, run, root, region, f"cannot optimize: {why}"))
    if ran.timed_out:
        return failed(f"timeout after {optimize_timeout(options, regions):g} s", kernels)
    if ran.returncode != 0 or results is None:
        why = short_reason(ran.stderr or ran.stdout)
        return failed(f"optimize exited {ran.returncode}: {why}", kernels)
    if not kernels:
        return failed("nothing optimized: the build recorded no region")
    return AppRun(app.name, run, tuple(kernels), None, time.monotonic() - started, str(work))


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


def free_stem(out: Path, name: str) -> str:
    """`name`, or `name-2`, `-3`... so that an earlier report of the same day is never
    overwritten."""
    stem, n = name, 1
    while (out / f"{stem}.json").exists() or (out / f"{stem}.md").exists():
        n += 1
        stem = f"{name}-{n}"
    return stem


def run_suite(options: Options, echo: Callable[[str], None] = lambda _: None) -> Report:
    """Every app, every run, then the table."""
    apps = find_apps(options.suite, options.only)
    started = time.time()
    date = time.strftime("%Y-%m-%d", time.localtime(started))
    options.out.mkdir(parents=True, exist_ok=True)
    stem = free_stem(options.out, report_name(options, date))
    work = options.out / "work" / stem
    kernels: list[Kernel] = []
    runs: list[AppRun] = []
    for app in apps:
        try:
            kernels += app_kernels(app, build_dir_name(app))
        except ConfigError:
            kernels += app_kernels(app)
        for run in range(1, options.runs + 1):
            say = _prefixed(echo, f"[{app.name} run {run}/{options.runs}]")
            runs.append(run_app(app, run, options, work / app.name / f"run-{run}", say))
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
            "out": str(options.out),
            "work": str(work),
            "stem": stem,
        },  # fmt: skip
        rows=tuple(rows),
        overall=summarize(rows, sum(1 for r in runs if r.error is not None)),
        runs=tuple(runs),
        wall_s=time.time() - started,
    )


def _prefixed(echo: Callable[[str], None], label: str) -> Callable[[str], None]:
    return lambda message: echo(f"{label} {message}")


def write_report(report: Report, out: Path) -> tuple[Path, Path]:
    """`<out>/<stem>.json` and `.md`; returns their paths."""
    stem = str(report.options.get("stem") or free_stem(out, f"suite-{report.date}"))
    out.mkdir(parents=True, exist_ok=True)
    json_path, md_path = out / f"{stem}.json", out / f"{stem}.md"
    json_path.write_text(json.dumps(report.to_dict(), indent=2) + "\n", encoding="utf-8")
    md_path.write_text(render_markdown(report), encoding="utf-8")
    return json_path, md_path


def command_line(argv: Sequence[str] | None = None) -> str:
    """The command as typed, from `nvcc-opt` on (run any other way, e.g. `python -c` or
    `python -m nvcc_opt.bench_cli`, its program is written as the `nvcc-opt bench` it stands
    for)."""
    args = list(sys.argv if argv is None else argv)
    if not args:
        return ""
    head = [Path(args[0]).name] if Path(args[0]).name == "nvcc-opt" else ["nvcc-opt", "bench"]
    return shlex.join([*head, *args[1:]])
