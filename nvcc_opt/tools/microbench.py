"""microbench_code: compile and run a standalone single-file CUDA program with the timing helpers
of `harness/nvcc_opt_bench.cuh`, under timeouts, and summarize what it measured.

Each distinct (source, compile_args) builds once in a fresh folder holding the source verbatim
(`bench.cu`, so compiler errors carry the model's own line numbers) and a copy of the header; the
binary runs in that folder, sandboxed where bubblewrap works, with its process group killed at the
timeout. Programs print `NVCC_OPT_TIME` and `NVCC_OPT_RESULT` lines; the tool turns them into
tables. `fresh_run` reruns a build with seeds (`NVCC_OPT_SEED`) and arguments never used while
exploring, and `mismatches` compares its results with a reference program's.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt import flags
from nvcc_opt.pool.lease import gpu_lease
from nvcc_opt.toolbox.output import cap
from nvcc_opt.toolbox.schema import ToolError, tool
from nvcc_opt.verify.stats import summarize
from nvcc_opt.workspace.diagnostics import trim_errors
from nvcc_opt.workspace.runner import Completed, Runner

HEADER = Path(__file__).with_name("harness") / "nvcc_opt_bench.cuh"
SOURCE = "bench.cu"
PROGRAM = "bench"
EXPLORE_SEED = 1  # the header's default too: a program run by hand sees the explored inputs
SHOWN_CHARS = 8_000  # per stream of program output, so that the tables above are never cut
SHOWN_LINES = 120

_LINE = re.compile(r"NVCC_OPT_(TIME|RESULT)((?: +[^\s=]+=\S*)+) *")


class MicrobenchError(Exception):
    """A program that does not build, for callers outside the tool loop."""


@dataclass(frozen=True)
class Timing:
    name: str
    ms: float  # median per launch over the measurement's runs
    min_ms: float
    runs: int


@dataclass(frozen=True)
class Result:
    name: str
    checksum: float  # sum of the finite values
    abssum: float  # sum of their magnitudes: the scale for comparing checksums
    n: int
    nonfinite: int


@dataclass(frozen=True)
class Parsed:
    timings: tuple[Timing, ...]
    results: tuple[Result, ...]
    malformed: tuple[str, ...]
    other: str  # the output without the NVCC_OPT lines


@dataclass(frozen=True)
class FreshRun:
    seed: int
    args: tuple[str, ...]
    completed: Completed
    parsed: Parsed


def _allowed(compile_args: Sequence[str]) -> list[str]:
    """`compile_args` as a list, or ToolError saying what is refused and what is allowed: the
    allowlist every entry point uses (nvcc_opt.flags); the program is standalone, so syntax only."""
    try:
        flags.check(compile_args)
    except flags.FlagError as exc:
        raise ToolError(str(exc)) from exc
    return list(compile_args)


def parse_output(stdout: str) -> Parsed:
    """The NVCC_OPT_TIME and NVCC_OPT_RESULT lines of a program's output (pure)."""
    timings: list[Timing] = []
    results: list[Result] = []
    malformed: list[str] = []
    other: list[str] = []
    for line in stdout.splitlines(keepends=True):
        if not line.startswith("NVCC_OPT_"):
            other.append(line)
            continue
        found = _LINE.fullmatch(line.rstrip("\r\n"))
        fields = dict(w.split("=", 1) for w in found[2].split()) if found else {}
        try:
            if found and found[1] == "TIME":
                timings.append(_timing(fields))
            elif found:
                results.append(_result(fields))
            else:
                malformed.append(line.strip())
        except (KeyError, ValueError):
            malformed.append(line.strip())
    return Parsed(tuple(timings), tuple(results), tuple(malformed), "".join(other))


def _timing(fields: Mapping[str, str]) -> Timing:
    return Timing(fields["name"], float(fields["ms"]), float(fields["min"]), int(fields["runs"]))


def _result(fields: Mapping[str, str]) -> Result:
    return Result(
        fields["name"],
        float(fields["checksum"]),
        float(fields["abssum"]),
        int(fields["n"]),
        int(fields["nonfinite"]),
    )


class Microbench:
    """The microbench_code tool; builds live in fresh folders under `workdir`."""

    def __init__(
        self,
        runner: Runner,
        workdir: Path,
        nvcc: str = "nvcc",
        arch: str = "sm_90",
        *,
        compile_timeout_s: float = 180.0,
        run_timeout_s: float = 60.0,
        gpu: str | None = None,
    ) -> None:
        self.runner = runner
        self.workdir = workdir
        self.nvcc = nvcc
        self.arch = arch
        self.compile_timeout_s = compile_timeout_s
        self.run_timeout_s = run_timeout_s
        self.gpu = gpu  # CUDA_VISIBLE_DEVICES for the runs; None: inherited
        self._built: dict[str, tuple[Path, str]] = {}

    @tool
    def microbench_code(
        self, source: str, compile_args: list[str] | None = None, args: list[str] | None = None
    ) -> str:
        """Compile a standalone single-file CUDA program and run it under a timeout, to try an
        idea or time a kernel in isolation. `#include "nvcc_opt_bench.cuh"` for the helpers:
        NVCC_OPT_CHECK(call); nvcc_opt::int_arg(argc, argv, i, default) for sizes;
        nvcc_opt::random_fill(host_vector, stream) for inputs; nvcc_opt::device_buffer<T> out(n)
        for outputs (filled with NaN bytes before every timed run) or in(host_vector) for inputs;
        nvcc_opt::time_kernel("name", reps, [&] { kernel<<<g, b>>>(...); }) to time launches;
        nvcc_opt::report_checksum("name", out) to report a result.

        Args:
            source: The whole program (a .cu file with main); errors name it bench.cu, with
                your line numbers.
            compile_args: Extra nvcc flags, code generation only, e.g. ["-use_fast_math",
                "-Xptxas", "-v"]: fast math or its parts, -maxrregcount=N, -Xptxas options,
                -restrict, -extra-device-vectorization, -O0..-O3, -arch=sm_XXa (no macros,
                include paths, libraries or files); the tool already passes -O3
                -arch=<the GPU's> -lineinfo.
            args: Command-line arguments for the program, e.g. sizes ["1048576"].

        Returns:
            Whether it compiled (else the compiler's errors), how the run ended, a table of the
            timings (ms per launch) and checksums it reported, then its stdout and stderr.
        """
        folder, messages = self._build(source, _allowed(compile_args or []))
        if folder is None:
            return f"compiled: no (bench.cu is your source, lines as you sent them)\n{messages}"
        done = self._run(folder, list(args or []), EXPLORE_SEED)
        lines = ["compiled: yes"]
        if messages:  # warnings, or what -Xptxas -v reports
            lines += ["compiler messages:", cap(messages, 8_000, 60)]
        return "\n".join([*lines, *describe_run(done, parse_output(done.stdout))])

    def fresh_run(
        self,
        source: str,
        compile_args: Sequence[str] = (),
        args: Sequence[str] = (),
        *,
        seeds: Sequence[int],
        extra_args: Sequence[Sequence[str]] = (),
    ) -> list[FreshRun]:
        """Run the program built from `source` once per seed with `args` and with each of
        `extra_args` (e.g. a size never shown while exploring), in that order. Seeds must differ
        from the exploration seed. Raises MicrobenchError when it does not build."""
        if not seeds or EXPLORE_SEED in seeds:
            raise ValueError(f"fresh runs need seeds other than {EXPLORE_SEED}, got {seeds}")
        folder, messages = self._build(source, _allowed(compile_args))
        if folder is None:
            raise MicrobenchError(f"the program does not build:\n{messages}")
        runs = []
        for seed in seeds:
            for argv in (tuple(args), *map(tuple, extra_args)):
                done = self._run(folder, list(argv), seed)
                runs.append(FreshRun(seed, argv, done, parse_output(done.stdout)))
        return runs

    def compile_command(self, compile_args: Sequence[str]) -> list[str]:
        base = [self.nvcc, "-O3", f"-arch={self.arch}", "-lineinfo", "-I."]
        return [*base, *compile_args, "-o", PROGRAM, SOURCE]

    def _build(self, source: str, extra: list[str]) -> tuple[Path | None, str]:
        """The folder of a built program (or None) and the compiler's messages (trimmed to the
        errors when it failed). A program built before is not built again."""
        key = hashlib.sha256(json.dumps([source, extra, self.nvcc, self.arch]).encode()).hexdigest()
        if key in self._built:
            return self._built[key]
        self.workdir.mkdir(parents=True, exist_ok=True)
        folder = Path(tempfile.mkdtemp(prefix="mb-", dir=self.workdir))
        (folder / SOURCE).write_text(source, encoding="utf-8", newline="")
        shutil.copyfile(HEADER, folder / HEADER.name)
        done = self.runner.run(
            self.compile_command(extra),
            cwd=folder,
            timeout_s=self.compile_timeout_s,
            writable=[folder],
        )
        messages = (done.stdout + done.stderr).replace(f"{folder}{os.sep}", "")
        if done.timed_out:
            return None, f"the compiler timed out after {self.compile_timeout_s:g} s"
        if not done.ok or not (folder / PROGRAM).is_file():
            return None, trim_errors(messages, source=None, region_lines=None)
        self._built[key] = (folder, messages.strip())
        return self._built[key]

    def _run(self, folder: Path, args: list[str], seed: int) -> Completed:
        env = {**os.environ, "NVCC_OPT_SEED": str(seed)}
        if self.gpu is not None:
            env["CUDA_VISIBLE_DEVICES"] = self.gpu
        # the GPU alone while it times; unset CUDA_VISIBLE_DEVICES: every GPU of the host
        with gpu_lease(env.get("CUDA_VISIBLE_DEVICES")):
            return self.runner.run(
                [f"./{PROGRAM}", *args],
                cwd=folder,
                env=env,
                timeout_s=self.run_timeout_s,
                writable=[folder],
            )


def describe_run(done: Completed, parsed: Parsed) -> list[str]:
    """How a run ended, its timing and result tables, then its (capped) output."""
    lines = [f"ran: {_ending(done)} in {done.wall_s:.2f} s"]
    if done.note and not done.timed_out:
        lines.append(f"note: {done.note}")
    lines += _timing_table(parsed.timings) + _result_table(parsed.results)
    lines += [f"malformed NVCC_OPT line ignored: {line[:200]}" for line in parsed.malformed]
    for label, text in (("stdout", parsed.other), ("stderr", done.stderr)):
        lines += [f"{label}:", cap(text, SHOWN_CHARS, SHOWN_LINES, keep="both").rstrip("\n")]
    return lines


def _ending(done: Completed) -> str:
    if done.timed_out:
        return f"{done.note} (a kernel or loop that never ends?); output up to then below"
    if done.exit_status < 0:
        return f"killed by signal {-done.exit_status}"
    return f"exit status {done.exit_status}"


def _timing_table(timings: Sequence[Timing]) -> list[str]:
    if not timings:
        return ["timings: none reported (nvcc_opt::time_kernel prints them)"]
    lines = ["timings (ms per launch; median and min over runs):"]
    lines.append(f"  {'name':<24} {'median':>12} {'min':>12} {'runs':>5}")
    for name in dict.fromkeys(t.name for t in timings):
        mine = [t for t in timings if t.name == name]
        valid = [t.ms for t in mine if math.isfinite(t.ms) and t.ms > 0]
        if not valid:
            lines.append(f"  {name:<24} too short to time (ms={mine[0].ms:g}); raise reps")
            continue
        sample = summarize(valid)
        least = min(t.min_ms for t in mine)
        row = f"  {name:<24} {sample.median:>12.6g} {least:>12.6g} {sum(t.runs for t in mine):>5}"
        if sample.n > 1:
            row += f"  ({sample.n} measurements, spread {sample.spread:.1%})"
        lines.append(row)
    return lines


def _result_table(results: Sequence[Result]) -> list[str]:
    if not results:
        return []
    lines = ["results:"]
    for r in results:
        row = f"  {r.name:<24} checksum={r.checksum:.10g} abssum={r.abssum:.10g} n={r.n}"
        if r.nonfinite:
            row += f" nonfinite={r.nonfinite} (NaN/inf; outputs never written stay NaN)"
        lines.append(row)
    return lines


def mismatches(
    reference: Sequence[FreshRun],
    candidate: Sequence[FreshRun],
    *,
    rtol: float = 1e-5,
    atol: float = 1e-8,
) -> list[str]:
    """Why the candidate's fresh runs disagree with the reference's (empty: they agree).

    Runs pair by (seed, args). A checksum may differ by `atol * n + rtol * abssum`: rounding
    error of a sum grows with the magnitudes summed, not with the (possibly cancelling) sum."""
    problems: list[str] = []
    base = {(r.seed, r.args): r for r in reference}
    for run in candidate:
        where = f"seed {run.seed} args {list(run.args)}"
        ref = base.get((run.seed, run.args))
        if ref is None:
            problems.append(f"{where}: no reference run")
        elif not run.completed.ok:
            problems.append(f"{where}: {_ending(run.completed)}")
        else:
            problems += [f"{where}: {p}" for p in _differences(ref.parsed, run.parsed, rtol, atol)]
    return problems


def _differences(ref: Parsed, cand: Parsed, rtol: float, atol: float) -> list[str]:
    mine = {r.name: r for r in cand.results}
    if not ref.results:
        return ["the reference reported no results"]
    problems = []
    for want in ref.results:
        got = mine.get(want.name)
        if got is None:
            problems.append(f"result {want.name} missing")
        elif (got.n, got.nonfinite) != (want.n, want.nonfinite):
            problems.append(
                f"result {want.name}: n={got.n} nonfinite={got.nonfinite}, "
                f"expected n={want.n} nonfinite={want.nonfinite}"
            )
        elif abs(got.checksum - want.checksum) > atol * want.n + rtol * want.abssum:
            problems.append(
                f"result {want.name}: checksum {got.checksum:.10g}, expected {want.checksum:.10g}"
            )
    return problems
