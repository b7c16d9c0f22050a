"""The build, run and self-check stages of a synthetic sample (see `importers.synthetic`).

The app is configured and built for real (CMake, Ninja when installed, nvcc) in a scratch
folder outside the problem, so the problem keeps no build tree with staging paths in it. With a
GPU the program then runs, contained, on the default inputs and on each of the fresh inputs the
final verification will use (read from the template's nvcc-opt.toml, so the two cannot differ):
a kernel that passes only at the default size would be a problem nothing can verify.
"""

from __future__ import annotations

import re
import shutil
import tempfile
import tomllib
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.workspace.diagnostics import trim_errors
from nvcc_opt.workspace.runner import Completed, Runner
from nvcc_opt_train.problemset import Problem

TEMPLATE_CONFIG = Path(__file__).resolve().parent.parent / "data" / "synthetic" / "nvcc-opt.toml"
PROGRAM = "synth"  # the executable CMakeLists.txt makes
BUILD_TIMEOUT_S = 600.0
RUN_TIMEOUT_S = 120.0
_TIME = re.compile(r"^time_ms: ([0-9.eE+-]+)$", re.MULTILINE)
_CHECK = re.compile(r"^check: .*$", re.MULTILINE)


@dataclass(frozen=True)
class Built:
    """The stages a sample passed here, or the first it failed ("<stage>: <why>")."""

    stages: list[str]
    failed: str = ""
    notes: tuple[str, ...] = ()
    problem: Problem | None = None
    time_ms: float | None = None


def fresh_inputs() -> list[tuple[str, ...]]:
    """The argument sets of the final verification's fresh inputs, from the template."""
    config = tomllib.loads(TEMPLATE_CONFIG.read_text(encoding="utf-8"))
    return [tuple(str(a) for a in args) for args in config["verify"]["fresh_inputs"]]


def build_and_run(
    app: Path, runner: Runner, run: bool, not_run: str, region_lines: tuple[int, int]
) -> Built:
    """Build `app` (and run it when `run`); `not_run` says why it is not run otherwise."""
    with tempfile.TemporaryDirectory(prefix="nvcc-opt-synthetic-") as scratch:
        build = Path(scratch) / "build"
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        for argv in (
            ["cmake", "-S", str(app), "-B", str(build), *generator],
            ["cmake", "--build", str(build)],
        ):
            done = runner.run(argv, cwd=Path(scratch), timeout_s=BUILD_TIMEOUT_S, sandbox=False)
            if not done.ok:
                return Built([], f"built: {_build_error(done, app, region_lines)}")
        if not run:
            return Built(["built"], notes=(f"not run: {not_run}",))
        time_ms = None
        for args in [(), *fresh_inputs()]:
            done = runner.run(
                [str(build / PROGRAM), *args],
                cwd=Path(scratch),
                timeout_s=RUN_TIMEOUT_S,
                writable=[Path(scratch)],
            )
            stage, why = judge(done, args)
            if stage:
                passed = ["built", "ran"] if stage == "self-checked" else ["built"]
                return Built(passed, f"{stage}: {why}")
            if not args:
                time_ms = float(_TIME.findall(done.stdout)[-1])
        return Built(["built", "ran", "self-checked"], time_ms=time_ms)


def judge(done: Completed, args: tuple[str, ...]) -> tuple[str, str]:
    """("", "") when the run passed; else the stage it failed (ran, self-checked) and why."""
    where = f" (with {' '.join(args)})" if args else ""
    if done.timed_out:
        return "ran", f"timed out after {RUN_TIMEOUT_S:g} s{where}"
    checks = _CHECK.findall(done.stdout)
    if not checks:
        last = [line for line in done.stderr.splitlines() if line.strip()][-1:]
        how = f"killed by signal {-done.exit_status}" if done.exit_status < 0 else "ended"
        said = f": {last[0].strip()[:200]}" if last else ""
        return "ran", f"{how} (exit status {done.exit_status}) before a check line{where}{said}"
    if done.exit_status != 0 or checks[-1].strip() != "check: PASS":
        return "self-checked", f"{checks[-1].strip()}{where}"
    if not _TIME.search(done.stdout):
        return "self-checked", f"check: PASS but no time_ms line{where}"
    return "", ""


def _build_error(done: Completed, app: Path, region_lines: tuple[int, int]) -> str:
    """The first error of a failed build, on one line, paths relative to the app."""
    if done.timed_out:
        return f"timed out after {BUILD_TIMEOUT_S:g} s"
    output = f"{done.stdout}\n{done.stderr}".replace(f"{app}/", "")
    errors = trim_errors(output, source=Path("kernel.cu"), region_lines=region_lines, limit=1)
    first = next((line for line in errors.splitlines() if line.strip()), "")
    return " ".join(first.split())[:300] or f"exit status {done.exit_status}"
