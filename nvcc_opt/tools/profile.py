"""profile_kernel (optional, not one of the paper's six): build the region (or a candidate) in the
private candidate tree as benchmark_code does, run the project's run script once under Nsight
Compute, and summarize what the hardware counters say about the region's kernels.

Only the region's kernels are profiled (`--kernel-name`), only their first few launches
(`--launch-count`), with `--clock-control none` so the clocks are those of a normal run. ncu
replays each profiled launch several times, so the run may take much longer than usual: its
timeout is the [run] timeout times `SLOWDOWN`, and the runner kills the whole process group when
it passes.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt import flags
from nvcc_opt.pool.lease import gpu_lease
from nvcc_opt.toolbox.schema import ToolError, tool
from nvcc_opt.tools import ncu, ptxas
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.verify import guards
from nvcc_opt.workspace.runner import Completed
from nvcc_opt.workspace.tree import TreeError

LAUNCHES_PER_KERNEL = 3
SLOWDOWN = 5.0  # ncu's run timeout, in [run] timeouts
TOP_STALLS = 3
BUSY_PCT = 60.0  # a unit this close to its peak is what bounds the kernel
_TAIL_LINES = 15
NO_KERNELS = (
    "no kernels in this region: it defines no __global__ function, so there is nothing for "
    "profile_kernel to profile (it profiles the region's kernels by name). Use compiler_analysis "
    "for device functions and benchmark_code to time host code."
)
NOT_FOUND = (
    "ncu (Nsight Compute) was not found on PATH, beside nvcc or in the CUDA toolkit's folders, so "
    "profile_kernel cannot run here. Install Nsight Compute or put ncu on PATH (it comes with the "
    "CUDA toolkit); meanwhile use compiler_analysis (registers, occupancy, SASS) and "
    "benchmark_code (timing) instead."
)
PERMISSION = (
    "ncu may not read the GPU's performance counters here (ERR_NVGPUCTRPERM): the driver lets "
    "only administrators profile. An administrator can allow it (driver option "
    "NVreg_RestrictProfilingToAdminUsers=0; see https://developer.nvidia.com/ERR_NVGPUCTRPERM). "
    "Until then use compiler_analysis and benchmark_code instead."
)


@dataclass
class Profile:
    """The profile_kernel tool for the region of `bench`, built in its candidate tree."""

    bench: Benchmark

    @tool
    def profile_kernel(self, code: str | None = None, compile_args: list[str] | None = None) -> str:
        """Build the application with the region (or `code` in its place), run it once under
        Nsight Compute (ncu) and summarize the hardware counters of the region's kernels: time,
        DRAM and SM throughput against peak, achieved occupancy and the top warp stall reasons.

        Args:
            code: The complete new text of the region to profile; omit it to profile the region
                as it is now.
            compile_args: Extra nvcc flags for this file only, code generation only, e.g.
                ["-maxrregcount=64"]: as benchmark_code takes them.

        Returns:
            Per kernel, averaged over its first few profiled launches: time per launch, DRAM
            throughput (% of peak and GB/s), SM throughput (% of peak), achieved and theoretical
            occupancy with the per-resource block limits, registers per thread, and the top
            three stall reasons with their share of a warp's cycles. Correctness is not checked:
            use benchmark_code for that.
        """
        try:
            flags.check(compile_args or [])
        except flags.FlagError as exc:
            raise ToolError(f"{exc}\nNothing was built; call again with allowed flags.") from exc
        text = self.bench.region.text if code is None else code
        declared, _ = ptxas.kernels(ptxas.code_only(text))
        if not declared:
            return NO_KERNELS
        executable = ncu.find()
        if executable is None:
            raise ToolError(NOT_FOUND)
        region = self.bench.region
        if code is not None:
            reasons = guards.check(region.text, code, file_text=region.file_text)
            if reasons:
                raise ToolError(
                    "benchmark_code would reject this code before building it, so it is not "
                    "profiled:\n" + "\n".join(f"  {r}" for r in reasons)
                )
        names = [k.name for k in declared]
        build_dir = self._build(text, list(compile_args or []))
        launch_count = LAUNCHES_PER_KERNEL * len(names)
        done = self._run(ncu.command(executable, names, launch_count), build_dir)
        output = f"{done.stdout}\n{done.stderr}"
        launches = ncu.parse_csv(done.stdout)
        mine = [launch for launch in launches if launch.kernel in names]
        self._fail_without_profile(done, output, mine, names)
        lines = [self._heading(code, compile_args, launch_count, len(names))]
        if not done.ok:
            lines.append(
                f"note: the run exited with status {done.exit_status} after the kernels were "
                "profiled; check the code with benchmark_code"
            )
        for name in names:
            lines += _kernel_lines(name, ncu.summarize(mine, name), launch_count)
        return "\n".join(lines)

    def _build(self, text: str, compile_args: list[str]) -> Path:
        """The candidate tree built with `text` as the region: benchmark_code's tree and build."""
        try:
            built, tree = self.bench.build_candidate(text, compile_args, "profile-candidate")
        except TreeError as exc:
            raise ToolError(f"{exc}\nFix the build settings ([build] in nvcc-opt.toml).") from exc
        if not built.ok:
            raise ToolError(
                f"the code does not build, so there is nothing to profile:\n{built.errors}\n"
                "Fix these errors and call profile_kernel again."
            )
        return tree.path

    def _run(self, words: Sequence[str], build_dir: Path) -> Completed:
        """The project's run script once, under ncu, on the configured GPU, sandboxed as a
        benchmark_code run is."""
        config, gpu = self.bench.config, self.bench.gpu
        with (
            tempfile.TemporaryDirectory(prefix="nvcc-opt-profile-") as scratch,
            gpu_lease(gpu),  # the GPU alone: ncu replays and times launches
        ):
            work = Path(scratch)
            # as a benchmark_code run: no private tree writable (a candidate could change the
            # next candidate's objects), the project and the user's build neither
            build = self.bench.build_of(build_dir)
            return self.bench.runner.run(
                [*words, *config.render_run(build_dir, gpu, work)],
                cwd=config.run_cwd(build_dir, gpu, work),
                env={**os.environ, **config.run_env(build_dir, gpu, work)},
                timeout_s=config.run.timeout_s * SLOWDOWN,
                writable=(*build.writable, work),  # the last one becomes TMPDIR, where ncu locks
                readonly=build.readonly,
                output_cap=4_000_000,
            )

    def _fail_without_profile(
        self, done: Completed, output: str, mine: list[ncu.Launch], names: list[str]
    ) -> None:
        """A ToolError saying what to do when the run gave no profile of the region's kernels."""
        if ncu.PERMISSION in output:
            raise ToolError(PERMISSION)
        if done.timed_out:
            limit = self.bench.config.run.timeout_s * SLOWDOWN
            raise ToolError(
                f"the run under ncu did not finish within {limit:g} s ({SLOWDOWN:g} times [run] "
                "timeout_s) and was stopped: ncu replays every profiled launch several times. "
                "Raise [run] timeout_s, or profile a run with a smaller problem."
            )
        if mine:
            return
        errors = ncu.problems(output)
        if errors:
            raise ToolError(
                "ncu failed:\n" + "\n".join(errors[-_TAIL_LINES:]) + "\nIf a metric is not "
                "supported on this GPU, use compiler_analysis and benchmark_code instead."
            )
        if not done.ok:
            raise ToolError(
                f"the run under ncu failed (exit status {done.exit_status}) before any of the "
                f"region's kernels was profiled:\n{_tail(output)}\nCheck the code with "
                "benchmark_code first."
            )
        raise ToolError(
            f"the run launched none of the region's kernels ({', '.join(names)}), so ncu "
            "profiled nothing: the run script must reach the code that launches them."
        )

    def _heading(
        self, code: str | None, compile_args: list[str] | None, launch_count: int, kernels: int
    ) -> str:
        what = "the code given" if code is not None else "the region as it is"
        args = f" with {' '.join(compile_args)}" if compile_args else ""
        return (
            f"region '{self.bench.region.name}' ({what}{args}) profiled with Nsight Compute: the "
            f"run script once, the first {launch_count} launches of the region's {kernels} "
            f"kernel{'s' if kernels != 1 else ''} ({LAUNCHES_PER_KERNEL} per kernel when they "
            "alternate), clocks not locked (--clock-control none); values are averages over the "
            "profiled launches. Times under the profiler are indicative: compare versions with "
            "benchmark_code."
        )


def _kernel_lines(name: str, summary: ncu.Summary | None, launch_count: int) -> list[str]:
    if summary is None:
        return [
            "",
            f"kernel {name}: not profiled (not launched among the first {launch_count} launches "
            "of the region's kernels)",
        ]
    v = summary.values
    shape = []
    if ncu.GRID_SIZE in v and ncu.BLOCK_SIZE in v:
        shape.append(f"grid {v[ncu.GRID_SIZE]:.0f} x block {v[ncu.BLOCK_SIZE]:.0f}")
    if ncu.REGISTERS in v:
        shape.append(f"{v[ncu.REGISTERS]:.0f} registers/thread")
    launches = f"{summary.launches} launch{'es' if summary.launches != 1 else ''} profiled"
    lines = ["", f"kernel {name}: {', '.join([launches, *shape])}"]
    if ncu.TIME in v:
        lines.append(f"  time: {_duration(v[ncu.TIME])} per launch")
    throughput = []
    if ncu.DRAM_PCT in v:
        rate = v.get(ncu.DRAM_BYTES_PER_S)
        gbs = f" ({rate / 1e9:.1f} GB/s)" if rate is not None else ""
        throughput.append(f"DRAM {v[ncu.DRAM_PCT]:.1f}% of peak{gbs}")
    if ncu.SM_PCT in v:
        throughput.append(f"SM throughput {v[ncu.SM_PCT]:.1f}% of peak")
    if throughput:
        lines.append(f"  {'; '.join(throughput)}")
    if ncu.ACHIEVED_OCCUPANCY in v:
        occupancy = f"  achieved occupancy {v[ncu.ACHIEVED_OCCUPANCY]:.1f}%"
        if ncu.THEORETICAL_OCCUPANCY in v:
            occupancy += f" (theoretical {v[ncu.THEORETICAL_OCCUPANCY]:.1f}%)"
        lines.append(occupancy)
    limits = [(what, v[metric]) for what, metric in ncu.LIMITS.items() if metric in v]
    if limits:
        smallest = min(n for _, n in limits)
        shown = ", ".join(f"{what} {n:.0f}" for what, n in limits)
        binding = " and ".join(what for what, n in limits if n == smallest)
        lines.append(f"  blocks per SM allowed by {shown}: {binding} set the limit")
    if summary.stalls:
        top = ", ".join(f"{reason} {share:.0%}" for reason, share in summary.stalls[:TOP_STALLS])
        total = summary.cycles_per_issue or 0.0
        lines.append(
            f"  top stall reasons: {top} (share of the {total:.1f} cycles between a warp's "
            "instructions)"
        )
    hint = _hint(v)
    if hint:
        lines.append(f"  hint: {hint}")
    return lines


def _hint(v: dict[str, float]) -> str:
    dram, sm = v.get(ncu.DRAM_PCT), v.get(ncu.SM_PCT)
    if dram is None or sm is None:
        return ""
    if dram >= BUSY_PCT and dram >= sm:
        return "memory-bound (DRAM near peak): move fewer bytes (fuse passes, reuse, narrow types)"
    if sm >= BUSY_PCT:
        return "compute-bound (SM near peak): fewer or cheaper instructions"
    return (
        "neither DRAM nor SM is near peak: latency-bound; more independent work per thread or "
        "more warps in flight (see the stall reasons and occupancy)"
    )


def _duration(ns: float) -> str:
    if ns >= 1e6:
        return f"{ns / 1e6:.3f} ms"
    if ns >= 1e3:
        return f"{ns / 1e3:.2f} us"
    return f"{ns:.0f} ns"


def _tail(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return "\n".join(lines[-_TAIL_LINES:])
