"""Runs of two LULESH binaries, interleaved (A B A B ...) on one GPU, with the kernel timed by
Nsight Systems or, without it, Nsight Compute.

Application time: LULESH's own main-loop clock (output.Figures.elapsed_s) from plain runs.
Kernel time, from separate runs, so a profiler's overhead never reaches the application time:

- nsys (preferred): the sum of CalcKinematicsAndMonotonicQGradient_kernel's durations in a run
  under `nsys profile --trace=cuda` (`nsys stats --report cuda_gpu_kern_sum`).
- ncu, when nsys is not on PATH (ncu found as nvcc_opt's profile_kernel finds it: PATH, beside
  nvcc, the CUDA toolkit): the mean `gpu__time_duration.sum` of the kernel's launches
  NCU_LAUNCH_SKIP+1 .. NCU_LAUNCH_SKIP+NCU_LAUNCH_COUNT in a run under `ncu_command` (the other
  launches run unprofiled), per launch, under ncu's serialization and its default clock control
  (base clocks) and cache control (flushed before each profiled launch).

Without either the kernel time is None and `kernel_note` says why; the application times still
come. `kernel_note` names the tool and what its figure is.
"""

from __future__ import annotations

import csv
import io
import shutil
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from integration.lulesh.output import KERNEL, Figures, OutputError, parse
from nvcc_opt.tools import ncu
from nvcc_opt.workspace.runner import Completed, Runner

NCU_LAUNCH_SKIP = 5  # launches of the kernel ncu lets run before it profiles (warm-up)
NCU_LAUNCH_COUNT = 40  # launches it profiles; the later ones run normally (-s 120: seconds)


@dataclass(frozen=True)
class Profiler:
    """The tool that times the kernel: "nsys" or "ncu", and its executable."""

    tool: Literal["nsys", "ncu"]
    path: str


@dataclass
class Samples:
    figures: list[Figures] = field(default_factory=list)
    kernel_ms: list[float] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    profiler: Profiler | None = None  # what timed the kernel (kernel_ms): nsys, ncu or none


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


def ncu_path() -> str | None:
    return ncu.find()


def profiler() -> Profiler | None:
    """nsys when on PATH, else ncu where found, else None."""
    nsys = nsys_path()
    if nsys is not None:
        return Profiler("nsys", nsys)
    found = ncu_path()
    return Profiler("ncu", found) if found is not None else None


def kernel_note(tool: Profiler | None) -> str:
    """The kernel row's note: which tool measured it and what the figure is, or why none."""
    if tool is None:
        return (
            "not measured: neither nsys (Nsight Systems) nor ncu (Nsight Compute) is on PATH "
            "(ncu was also looked for beside nvcc and in the CUDA toolkit)"
        )
    if tool.tool == "ncu":
        return (
            f"mean {KERNEL} duration per launch, ncu {ncu.TIME} over launches "
            f"{NCU_LAUNCH_SKIP + 1}-{NCU_LAUNCH_SKIP + NCU_LAUNCH_COUNT} of each run (nsys is "
            "not on PATH), under ncu's serialization, its default clock control (base clocks) "
            "and cache control (caches flushed before each launch); baseline and optimized are "
            "measured the same way"
        )
    return f"sum of {KERNEL} durations per run, nsys cuda_gpu_kern_sum"


def kernel_ms(
    runner: Runner, tool: Profiler, argv: Sequence[str], cwd: Path, timeout_s: float, tag: str
) -> float:
    """One run's kernel figure in ms: with nsys the run's total, with ncu the mean per launch."""
    if tool.tool == "ncu":
        return ncu_kernel_ms(runner, tool.path, argv, cwd, timeout_s)
    return nsys_kernel_ms(runner, tool.path, argv, cwd, timeout_s, tag)


def nsys_kernel_ms(
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


def ncu_command(ncu_exe: str, argv: Sequence[str]) -> list[str]:
    """One LULESH run under ncu: only the kernel's launches NCU_LAUNCH_SKIP+1 .. +COUNT are
    profiled (their duration, as CSV on stdout); ncu's default clock and cache control."""
    return [ncu_exe, "--csv", "--print-units", "base", "--metrics", ncu.TIME,
            "-k", f"regex:^{KERNEL}$", "--launch-skip", str(NCU_LAUNCH_SKIP),
            "--launch-count", str(NCU_LAUNCH_COUNT), *argv]  # fmt: skip


def ncu_kernel_ms(
    runner: Runner, ncu_exe: str, argv: Sequence[str], cwd: Path, timeout_s: float
) -> float:
    """The kernel's mean duration per profiled launch in one run under ncu, in ms. The run
    must finish as a plain one does (exit status 0, `Run completed`)."""
    profile = ncu_command(ncu_exe, argv)
    done = runner.run(profile, cwd=cwd, timeout_s=timeout_s * 3, sandbox=False)
    out = _finished(done, profile)
    if "Run completed" not in out:
        raise OutputError(f"{Path(argv[0]).name} under ncu did not finish: no 'Run completed'")
    return kernel_mean_ms(f"{out}\n{done.stderr}")


def kernel_mean_ms(text: str) -> float:
    """The kernel's mean `gpu__time_duration.sum` (ms) over its launches in ncu's `--csv`
    output (other kernels, ==PROF== lines and the program's output are skipped)."""
    times = [launch.values[ncu.TIME] for launch in ncu.parse_csv(text)
             if launch.kernel == KERNEL and ncu.TIME in launch.values]  # fmt: skip
    if not times:
        errors = ncu.problems(text)
        launched = f"launch it more than {NCU_LAUNCH_SKIP} times"
        why = f" ({errors[-1][:300]})" if errors else f" (did the run {launched}?)"
        raise OutputError(f"ncu printed no {ncu.TIME} row for {KERNEL}{why}")
    return sum(times) / len(times) * 1e-6


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
    """`pairs` rounds; in each, every binary runs once plainly, then once under the profiler
    (nsys, else ncu, if any), in the order given (baseline first). One warm-up run each before
    the first round."""
    tool = profiler()
    out = {name: Samples(profiler=tool) for name in binaries}
    argvs = {name: lulesh_argv(binary, size, iters) for name, binary in binaries.items()}
    for name, argv in argvs.items():
        _record(out[name], runner, argv, cwd, timeout_s, warm=True)
    for round_ in range(pairs):
        progress(f"timing round {round_ + 1}/{pairs}")
        for name, argv in argvs.items():
            _record(out[name], runner, argv, cwd, timeout_s)
        if tool is None:
            continue
        for name, argv in argvs.items():
            try:
                out[name].kernel_ms.append(kernel_ms(runner, tool, argv, cwd, timeout_s, name))
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
