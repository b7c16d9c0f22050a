"""Runs of two LULESH binaries, interleaved (A B A B ...) on one GPU, with the kernel timed by
Nsight Systems.

Application time: LULESH's own main-loop clock (output.Figures.elapsed_s) from plain runs.
Kernel time: the sum of CalcKinematicsAndMonotonicQGradient_kernel's durations in a run under
`nsys profile --trace=cuda` (`nsys stats --report cuda_gpu_kern_sum`), from separate runs, so the
profiler's overhead never reaches the application time. Without nsys on PATH the kernel time is
None and `kernel_note` says why; the application times still come.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from integration.lulesh.output import KERNEL, Figures, OutputError, parse
from nvcc_opt.workspace.runner import Completed, Runner


@dataclass
class Samples:
    figures: list[Figures] = field(default_factory=list)
    kernel_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)


def lulesh_argv(binary: Path, size: int, iters: int) -> list[str]:
    return [str(binary), "-s", str(size), *(["-i", str(iters)] if iters > 0 else [])]


def run_once(runner: Runner, argv: Sequence[str], cwd: Path, timeout_s: float) -> Figures:
    """One finished run's figures; OutputError for a crash, a timeout or unreadable output."""
    done = runner.run(list(argv), cwd=cwd, timeout_s=timeout_s, sandbox=False)
    return parse(_finished(done, argv))


def _finished(done: Completed, argv: Sequence[str]) -> str:
    if done.timed_out:
        raise OutputError(f"{Path(argv[0]).name} timed out ({done.wall_s:.0f} s)")
    if done.exit_status != 0:
        signal = f" (signal {-done.exit_status})" if done.exit_status < 0 else ""
        last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-1:] or [""]
        raise OutputError(
            f"{Path(argv[0]).name} exited with status {done.exit_status}{signal}: {last[0][:200]}"
        )
    return done.stdout


def nsys_path() -> str | None:
    return shutil.which("nsys")


def kernel_note(nsys: str | None) -> str:
    if nsys is None:
        return "not measured: nsys (Nsight Systems) is not on PATH"
    return f"sum of {KERNEL} durations per run, nsys cuda_gpu_kern_sum"


def kernel_ms(
    runner: Runner, nsys: str, argv: Sequence[str], cwd: Path, timeout_s: float, tag: str
) -> float:
    """The kernel's total time in one run under nsys, in ms."""
    report = cwd / f"{tag}.nsys-rep"
    profile = [nsys, "profile", "--trace=cuda", "--sample=none", "--cpuctxsw=none",
               "--force-overwrite=true", "-o", str(report.with_suffix("")), *argv]  # fmt: skip
    _finished(runner.run(profile, cwd=cwd, timeout_s=timeout_s * 3, sandbox=False), argv)
    stats = [nsys, "stats", "--force-export=true", "--report", "cuda_gpu_kern_sum",
             "--format", "csv", "--output", "-", str(report)]  # fmt: skip
    done = runner.run(stats, cwd=cwd, timeout_s=600, sandbox=False)
    return kernel_total_ms(_finished(done, stats))


def kernel_total_ms(csv_text: str) -> float:
    """The kernel's total time (ms) in `nsys stats --report cuda_gpu_kern_sum --format csv`."""
    start = csv_text.find('"Time')
    start = csv_text.find("Time") if start < 0 else start
    if start < 0:
        raise OutputError("nsys stats printed no cuda_gpu_kern_sum table")
    total = None
    for row in csv.DictReader(io.StringIO(csv_text[start:])):
        name = (row.get("Name") or "").strip()
        if name.split("(")[0].split("<")[0].strip() == KERNEL:
            total = (total or 0.0) + float(row["Total Time (ns)"])
    if total is None:
        raise OutputError(f"{KERNEL} is not in nsys's kernel summary (did the run launch it?)")
    return total * 1e-6


def interleaved(
    runner: Runner,
    binaries: dict[str, Path],
    *,
    size: int,
    iters: int,
    pairs: int,
    cwd: Path,
    timeout_s: float,
    progress: Callable[[str], None] = lambda _: None,
) -> dict[str, Samples]:
    """`pairs` rounds; in each, every binary runs once plainly, then once under nsys (if any),
    in the order given (baseline first). One warm-up run each before the first round."""
    nsys = nsys_path()
    out = {name: Samples() for name in binaries}
    argvs = {name: lulesh_argv(binary, size, iters) for name, binary in binaries.items()}
    for name, argv in argvs.items():
        _record(out[name], runner, argv, cwd, timeout_s, warm=True)
    for round_ in range(pairs):
        progress(f"timing round {round_ + 1}/{pairs}")
        for name, argv in argvs.items():
            _record(out[name], runner, argv, cwd, timeout_s)
        if nsys is None:
            continue
        for name, argv in argvs.items():
            try:
                out[name].kernel_ms.append(kernel_ms(runner, nsys, argv, cwd, timeout_s, name))
            except OutputError as exc:
                out[name].failures.append(f"kernel: {exc}")
    return out


def _record(
    samples: Samples,
    runner: Runner,
    argv: Sequence[str],
    cwd: Path,
    timeout_s: float,
    warm: bool = False,
) -> None:
    try:
        figures = run_once(runner, argv, cwd, timeout_s)
    except OutputError as exc:
        samples.failures.append(str(exc))
        return
    if not warm:
        samples.figures.append(figures)
