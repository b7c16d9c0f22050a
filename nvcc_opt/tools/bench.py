"""benchmark_code: build the real application with the region replaced, run the project's own run
script interleaved with the baseline, and say whether the candidate is correct and faster.

Order of judgement: the compile_args allowlist and the token guards, then the build and the
compiled code (verify/compiled.py: the objects and PTX against the original's, the preprocessed
parse), then correctness, and only then timing. Every timed run carries nvcc-opt's own channel
(runtime/channel.cpp) where a GPU and CUPTI are present, and the candidate's runs must agree with
it (verify/corroborate.py). The structured verdict of every call is kept in `history` for the
trace and the final answer; what could not be measured is kept in `notes`.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Any

from nvcc_opt import flags
from nvcc_opt.config import ProjectConfig
from nvcc_opt.launcher import candidate
from nvcc_opt.runtime import build as channel_build
from nvcc_opt.toolbox.schema import ERROR, ToolError, tool
from nvcc_opt.tools.region import Region
from nvcc_opt.verify import guards
from nvcc_opt.verify.checks import RunOutput
from nvcc_opt.verify.compiled import CodeChecks
from nvcc_opt.verify.kernels import region_kernels
from nvcc_opt.verify.measure import (
    Attach,
    Build,
    MeasureError,
    RunHung,
    check,
    measure,
    run_once,
)
from nvcc_opt.verify.stats import Comparison
from nvcc_opt.verify.verdict import Verdict, decide
from nvcc_opt.workspace.runner import ProcessRunner, Runner
from nvcc_opt.workspace.tree import BuildResult, PrivateTree, TreeError


@dataclass
class Benchmark:
    """The benchmark_code tool for one region of one project. `close()` (or `with`) removes its
    scratch folder; the private trees stay, configured, for the next Benchmark of this label."""

    config: ProjectConfig
    region: Region
    runner: Runner
    launcher: str  # the nvcc-opt executable the private trees build through
    label: str = "explore"
    history: list[dict[str, Any]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)  # what could not be measured or contained
    _trees: tuple[PrivateTree, PrivateTree] | None = None
    _channel: Path | None = None
    _channel_tried: bool = False
    _code: CodeChecks | None = None
    _baseline_output: RunOutput | None = None
    _scratch: Path | None = None

    @property
    def gpu(self) -> str:
        return self.config.gpu.devices[0]

    @property
    def scratch(self) -> Path:
        """Where candidates are staged: made on first use, removed by `close()`."""
        if self._scratch is None:
            self._scratch = Path(tempfile.mkdtemp(prefix="nvcc-opt-cand-"))
        return self._scratch

    def close(self) -> None:
        if self._scratch is not None:
            shutil.rmtree(self._scratch, ignore_errors=True)
            self._scratch = None
        if self._code is not None:
            self._code.close()

    def __enter__(self) -> Benchmark:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def trees(self) -> tuple[PrivateTree, PrivateTree]:
        """The baseline and candidate trees, configured from the user's build (once)."""
        if self._trees is None:
            make = PrivateTree.create
            build = self.config.build_dir
            base = make(build, f"{self.label}-base", runner=self.runner, launcher=self.launcher)
            cand = make(build, f"{self.label}-cand", runner=self.runner, launcher=self.launcher)
            self._trees = (base, cand)
        return self._trees

    def build_candidate(
        self, code: str, compile_args: list[str], name: str = "candidate"
    ) -> tuple[BuildResult, PrivateTree]:
        """The candidate tree built with `code` in place of the region and `compile_args` for
        its file (staged as `<name>.json` in the scratch folder)."""
        _, tree = self.trees()
        staged = self.scratch / f"{name}.json"
        candidate.write(
            str(staged), str(self.region.file), self.region.text_hash, code, compile_args
        )
        return tree.build(candidate_file=staged, timeout_s=self.config.build.timeout_s), tree

    def baseline(self) -> Build:
        base, _ = self.trees()
        result = base.build(candidate_file=None, timeout_s=self.config.build.timeout_s)
        if not result.ok:
            raise ToolError(f"the baseline does not build:\n{result.errors}")
        return self.build_of(base.path)

    def build_of(self, tree: Path) -> Build:
        """A tree's runs may not write any private tree of this project (a candidate could
        change the baseline's binary), nor the project, the user's build or the channel library
        (built into the user's cache, loaded by every later run and process)."""
        protected: tuple[Path, ...] = (tree.parent, self.config.root, self.config.build_dir)
        library = self.channel()  # probed before any candidate runs, whatever it finds
        if library is not None:  # a run that rewrote it would steer every later measurement
            protected += (library.parent,)
        return Build(tree, readonly=protected)

    def code_checks(self) -> CodeChecks:
        """The compiled-code lines (verify/compiled.py), kept for this region's candidates."""
        if self._code is None:
            timeout = self.config.build.timeout_s
            self._code = CodeChecks(self.runner, self.region, self.launcher, timeout)
        return self._code

    def channel(self) -> Path | None:
        """The channel library, built once per machine; None (and an `unavailable:` note) where
        there is no GPU to run it or it cannot be built."""
        if not self._channel_tried:
            self._channel_tried = True
            if shutil.which("nvidia-smi") is None:
                self._note("unavailable: no GPU here, so nvcc-opt's own GPU measurement is off")
            else:
                try:
                    self._channel = channel_build.library(ProcessRunner())
                except channel_build.ChannelUnavailable as exc:
                    self._note(f"unavailable: nvcc-opt's own GPU measurement is off ({exc})")
        return self._channel

    def _note(self, note: str) -> None:
        if note not in self.notes:
            self.notes.append(note)

    def evaluate(
        self,
        code: str,
        compile_args: list[str],
        repeats: int,
        more_checks: Callable[[Build, Build], list[str]] | None = None,
        stop_early: bool = True,
    ) -> Verdict:
        """Guards, build, checks and timing of one candidate, as a structured verdict.

        `more_checks(baseline, candidate)` (the final verification's fresh inputs, sanitizer)
        runs after the candidate passed its first check and before any timing. `stop_early`:
        stop timing once the candidate cannot be called faster (`[run] stop_early_after`)."""
        refusals = flags.refused(compile_args)  # before anything is built or run
        if refusals:
            return decide(True, "", None, None, guard_reasons=[f"flags: {r}" for r in refusals])
        reasons = guards.check(self.region.text, code, file_text=self.region.file_text)
        if reasons:
            return decide(True, "", None, None, guard_reasons=reasons)
        try:
            base_tree, _ = self.trees()
        except TreeError as exc:
            raise ToolError(str(exc)) from exc
        checks = self.code_checks()
        # The baseline's build, the candidate's and the compiled-code checks' own compiles of
        # the region's file are independent: side by side they cost one long compile, not four
        # (a real application's file can take 20 s each). Only the object line waits for the
        # baseline's objects.
        with ThreadPoolExecutor(max_workers=3, thread_name_prefix="nvcc-opt-build") as pool:
            baseline_job = pool.submit(self.baseline)
            candidate_job = pool.submit(self.build_candidate, code, compile_args)
            checks_job = pool.submit(
                checks.reasons, base_tree.path, self.trees()[1].path, code, compile_args,
                baseline_built=lambda: baseline_job.exception() is None,
            )  # fmt: skip
            try:
                baseline = baseline_job.result()
            except TreeError as exc:
                raise ToolError(str(exc)) from exc
            built, _ = candidate_job.result()
            refused = checks_job.result()
        if not built.ok:
            return decide(False, built.errors, None, None)
        if refused:
            return decide(True, "", None, None, guard_reasons=refused)
        _, tree = self.trees()
        candidate_build = self.build_of(tree.path)
        later = None if more_checks is None else lambda: more_checks(baseline, candidate_build)
        library = self.channel()
        try:
            measured = measure(
                self.config,
                self.runner,
                baseline,
                candidate_build,
                repeats=repeats,
                gpu=self.gpu,
                baseline_output=self._reference(baseline),
                more_checks=later,
                stop_early=stop_early,
                attach=None if library is None else Attach(library),
                kernels=region_kernels(self.region.text, code),
                after_timing=getattr(more_checks, "after_timing", None),
            )
        except RunHung as exc:
            raise ToolError(str(exc)) from exc
        except MeasureError as exc:
            raise ToolError(f"{exc}; fix the candidate or the [time] settings") from exc
        for note in measured.notes:
            self._note(note)
        return decide(
            True, "", measured.check, measured.comparison, ceiling=self.config.verify.ceiling
        )

    def _reference(self, baseline: Build) -> RunOutput:
        if self._baseline_output is None:
            _, output, _ = run_once(self.config, self.runner, baseline, self.gpu)
            own = check(self.config, output, None)
            if not own.ok and shutil.which("nvidia-smi") is None:
                raise ToolError(
                    "no GPU here: the application cannot run on this machine, so benchmark_code"
                    " cannot time or check it; use compiler_analysis, microbench_code (compile"
                    " errors) and the file tools, or run on a machine with a GPU"
                )
            if not own.ok:
                raise MeasureError("the baseline fails its own checks: " + "; ".join(own.reasons))
            self._baseline_output = output
        return self._baseline_output

    @tool
    def benchmark_code(self, code: str, compile_args: list[str] | None = None) -> str:
        """Build the application with the region replaced by `code`, check its output against
        the original's, and time both with the project's run script, interleaved.

        Args:
            code: The complete new text of the region (every kernel and function it holds).
            compile_args: Extra nvcc flags for this file only, code generation only, e.g.
                ["-use_fast_math"]: fast math or its parts (-ftz, -prec-div, -prec-sqrt, -fmad
                =true|false), -maxrregcount=N, -Xptxas options (-O3, -v, -dlcm=cg, ...),
                -lineinfo, -restrict, -extra-device-vectorization, -O0..-O3, and
                -gencode=arch=compute_XXa,code=sm_XXa for the build's GPU sm_XX; anything else
                (macros, include paths, host compiler options, files) is rejected.

        Returns:
            Whether it compiled and is correct, the times of both versions, the speedup and
            whether it is beyond the run-to-run noise; build errors at the region's lines.
        """
        verdict = self.evaluate(code, list(compile_args or []), self.config.run.repeats)
        self.history.append({"code": code, "compile_args": compile_args or [], **verdict.to_dict()})
        return describe(verdict)


def describe(verdict: Verdict) -> str:
    lines = [
        f"compiled: {'yes' if verdict.compiled else 'no'}",
        f"correct: {'yes' if verdict.correct else 'no'}",
    ]
    if verdict.comparison is not None:
        lines += _timing(verdict.comparison)
    lines.append(f"verdict: {verdict.status}")
    lines += [f"  {reason}" for reason in verdict.reasons]
    return "\n".join(lines)


@dataclass(frozen=True)
class Measured:
    """A benchmark_code observation, read back (by policies and progress displays)."""

    verdict: str  # improved, no improvement, rejected, held for review, error
    speedup: float  # 1.0 when not timed
    why: str  # the first reason line, or the error

    @property
    def improved(self) -> bool:
        return self.verdict == "improved"


def read_benchmark(observation: str) -> Measured:
    """What `describe` (or a tool error) said: the verdict, the speedup, the first reason."""
    if observation.startswith(ERROR):
        return Measured("error", 1.0, observation[len(ERROR) :].strip().splitlines()[0][:300])
    verdict, speedup, why = "error", 1.0, ""
    lines = observation.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("speedup: "):
            speedup = float(line.split()[1].rstrip("x"))
        elif line.startswith("verdict: "):
            verdict = line.split(": ", 1)[1].strip()
            if i + 1 < len(lines):
                why = lines[i + 1].strip()
    return Measured(verdict, speedup if verdict in ("improved", "no improvement") else 1.0, why)


def _timing(comparison: Comparison) -> list[str]:
    base, cand = comparison.baseline, comparison.candidate
    return [
        f"baseline: median {base.median * 1e3:.4f} ms (spread {base.spread:.1%}, {base.n} runs)",
        f"candidate: median {cand.median * 1e3:.4f} ms (spread {cand.spread:.1%}, {cand.n} runs)",
        f"speedup: {comparison.speedup:.3f}x (95% CI {comparison.ci_low:.3f}-"
        f"{comparison.ci_high:.3f}, p={comparison.p_value:.3g}): {comparison.verdict}",
    ]
