"""`--from synthetic`: problems whose kernels a model writes, as in the paper's synthetic set.

Each sample (id `synthetic-s<seed>-<index>`) asks the model for the kernel and its `launch`
function only (`synthetic_prompt`: a fixed signature, an inspiration snippet of the corpus and a
variation, both picked by the seed and the index). The rest is fixed (`data/synthetic/`: the
driver main.cu, kernel.h, CMakeLists.txt, nvcc-opt.toml). A sample then passes, in order:

    generated     the model answered
    parsed        a code block with a __global__ kernel and `launch` with the right signature,
                  wrapped in an `@optimize begin/end` region that `regions.scan` confirms
    unique        not the code of an earlier sample (nor the prompt's own example)
    built         the app configured and built for real (CMake, Ninja, nvcc)
    ran           the program finished on the default and the fresh inputs (only with a GPU)
    self-checked  the driver's self-checks printed `check: PASS` on each of those runs

A sample that fails a stage is a Skip (`"<stage>: <why>"`); one that passes every stage applied
is a problem. Without a GPU the last two stages are not applied: the problem is kept as built,
says "not run: no GPU here" in its notes, and the tally shows it. Builds run on worker threads
while the model writes the next sample. Every sample's outcome is recorded (the problem's
`synthetic.json`, or `.synthetic/<id>.json` for a skip), so a resumed run asks the model again
only for samples it never finished.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import tempfile
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt.agent.model import Model, ModelError
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.workspace.runner import ProcessRunner, Runner
from nvcc_opt_train import synthetic_prompt as prompt
from nvcc_opt_train.importers import Skip
from nvcc_opt_train.importers.synthetic_build import Built, build_and_run
from nvcc_opt_train.problemset import Problem, write_atomic

DATA = Path(__file__).resolve().parent.parent / "data"
DEFAULT_CORPUS = DATA / "corpus"
TEMPLATE = DATA / "synthetic"
SOURCE = "synthetic"
KERNEL_FILE = "kernel.cu"
RECORD = "synthetic.json"  # in each problem's folder: its row and how it was made
SKIPS = ".synthetic"  # under the problems folder: one record per skipped sample
STAGES = ("generated", "parsed", "unique", "built", "ran", "self-checked")
RUN = ("ran", "self-checked")  # the stages that need a GPU
CHECKS = ("build", "run")  # run: build, then run where there is a GPU; build: never run
SNIPPET_SUFFIXES = (".cu", ".cuh")
MAX_SNIPPET_CHARS = 6000


class SyntheticError(ValueError):
    """Options, a corpus or a model this importer cannot use; the message is one line."""


@dataclass(frozen=True)
class SyntheticOptions:
    model: str  # a model spec (`nvcc_opt.agent.backends`); `search` writes no kernels
    count: int  # samples to ask for; each becomes a problem or a skip
    seed: int = 0  # picks each sample's snippet and variation; part of every id
    check: str = "run"  # "run" (build; run and self-check where a GPU is) or "build"


@dataclass
class Tally:
    """How many samples passed each stage; `applied` is False for a stage not run here."""

    samples: int = 0
    passed: dict[str, int] = field(default_factory=lambda: dict.fromkeys(STAGES, 0))
    not_run: str = ""  # why the run stages were not applied (no GPU here, --check build)
    resumed: int = 0

    def add(self, stages: list[str]) -> None:
        self.samples += 1
        for stage in stages:
            self.passed[stage] += 1

    def lines(self) -> list[str]:
        counts = [f"{self.passed[s]} {s}" for s in STAGES if not (self.not_run and s in RUN)]
        lines = [f"synthetic: {self.samples} samples: " + ", ".join(counts)]
        if self.not_run:
            lines.append(f"synthetic: ran, self-checked: not applied ({self.not_run})")
        if self.resumed:
            lines.append(f"synthetic: {self.resumed} of them recorded by an earlier run")
        return lines


_Outcome = tuple[Problem | Skip, list[str]]  # a sample's result and the stages it passed


@dataclass(frozen=True)
class _Sample:
    index: int
    id: str
    snippet: str  # the corpus file's name
    variation: int


def import_synthetic(
    corpus: Path,
    dest: Path,
    options: SyntheticOptions,
    say: Callable[[str], None],
    *,
    model: Model | None = None,
    runner: Runner | None = None,
    gpu: bool | None = None,
    tally: Tally | None = None,
) -> Iterator[Problem | Skip]:
    """Problems and Skips of `options.count` samples, in sample order (see the module
    docstring); the tally's lines go to `say` at the end. `model` replaces the spec's (tests),
    `runner` the process runner, `gpu` whether programs can run here (default: nvidia-smi is
    on PATH). SyntheticError (one line) for bad options, a bad corpus, a model spec that does
    not load, or a model that fails before its first answer; nothing is written before the
    options, the corpus and the spec are checked."""
    snippets = _check(corpus, options)
    model = model or _load(options.model)
    counts = tally if tally is not None else Tally()
    run_here = options.check == "run" and (gpu if gpu is not None else _gpu_here())
    if not run_here:
        counts.not_run = "no GPU here" if options.check == "run" else "--check build"
    dest.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(dest)
    seen = {prompt.EXAMPLE_DIGEST: "the prompt's example"}
    writer = _Writer(dest, options, runner or ProcessRunner(), run_here, counts.not_run)
    pending: deque[Future[_Outcome]] = deque()
    workers = max(1, min(4, (os.cpu_count() or 2) // 2))
    with ThreadPoolExecutor(workers, thread_name_prefix="synthetic-build") as pool:
        try:
            for sample in _samples(options, sorted(snippets)):
                done = _recorded(dest, sample, seen)
                if done is not None:
                    counts.resumed += 1
                    result: Future[_Outcome] = Future()
                    result.set_result(done)
                    pending.append(result)
                else:
                    answer = writer.ask(model, sample, snippets[sample.snippet], seen)
                    pending.append(pool.submit(writer.finish, sample, answer))
                while pending and pending[0].done():
                    yield _counted(pending.popleft().result(), counts, say)
            while pending:
                yield _counted(pending.popleft().result(), counts, say)
        finally:
            for future in pending:
                future.cancel()
    for line in counts.lines():
        say(line)


def _check(corpus: Path, options: SyntheticOptions) -> dict[str, str]:
    """The corpus' snippets by file name, after the options are checked."""
    if options.model.partition(":")[0].partition("?")[0].strip() == "search":
        raise SyntheticError(
            "--model search writes no kernels: synthetic problems need a language model "
            "(openai:..., vllm:..., hf:..., smollm2)"
        )
    if options.count < 1:
        raise SyntheticError(f"--count must be at least 1 (got {options.count})")
    if options.check not in CHECKS:
        raise SyntheticError(f"check must be one of {', '.join(CHECKS)} (got {options.check!r})")
    if not corpus.is_dir():
        raise SyntheticError(f"{corpus}: no such corpus folder")
    files = sorted(p for p in corpus.iterdir() if p.suffix in SNIPPET_SUFFIXES and p.is_file())
    if not files:
        raise SyntheticError(f"{corpus}: no inspiration snippets (*.cu, *.cuh) in the folder")
    snippets = {}
    for path in files:
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise SyntheticError(f"{path}: cannot read the snippet: {err}") from err
        if not text.strip() or len(text) > MAX_SNIPPET_CHARS:
            size = "is empty" if not text.strip() else f"has {len(text)} characters"
            raise SyntheticError(f"{path}: a snippet {size}; keep each 1-{MAX_SNIPPET_CHARS}")
        snippets[path.name] = text
    return snippets


def _samples(options: SyntheticOptions, names: list[str]) -> Iterator[_Sample]:
    """Each sample's id, snippet and variation: the same for the same seed, every run."""
    for index in range(options.count):
        pick = random.Random(f"synthetic:{options.seed}:{index}")
        snippet = pick.choice(names)
        variation = pick.randrange(len(prompt.VARIATIONS))
        yield _Sample(index, f"synthetic-s{options.seed}-{index:05d}", snippet, variation)


def _load(spec: str) -> Model:
    from nvcc_opt.agent import backends

    try:
        return backends.load(spec)
    except (ValueError, ModelError) as err:
        raise SyntheticError(f"--model {spec}: {err}") from err


def _gpu_here() -> bool:
    return shutil.which("nvidia-smi") is not None


def _remove_stale_staging(dest: Path) -> None:
    """Half-written problem folders a killed run left (never a finished one)."""
    for path in dest.glob(".tmp-synthetic-*"):
        shutil.rmtree(path, ignore_errors=True)


def _recorded(dest: Path, sample: _Sample, seen: dict[str, str]) -> _Outcome | None:
    """What an earlier run made of this sample (a kept folder or a skip record), or None."""
    folder, skip = dest / sample.id, dest / SKIPS / f"{sample.id}.json"
    path = folder / RECORD if folder.exists() else skip if skip.exists() else None
    if path is None:
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        stages = [str(s) for s in record["stages"]]
        if record.get("digest"):
            seen.setdefault(str(record["digest"]), sample.id)
        if path == skip:
            return Skip(SOURCE, sample.id, str(record["reason"])), stages
        return Problem.from_row(record["problem"], str(path)), stages
    except (OSError, ValueError, KeyError, TypeError) as err:
        raise SyntheticError(
            f"{path}: not a synthetic sample record ({err}); remove the sample's folder or "
            "record to make it again"
        ) from err


def _counted(outcome: _Outcome, tally: Tally, say: Callable[[str], None]) -> Problem | Skip:
    """The sample's result, counted and said (on the caller's thread, in sample order)."""
    result, stages = outcome
    tally.add(stages)
    if isinstance(result, Skip):
        say(f"{result.name}: skipped at {result.reason}")
    else:
        note = f" ({'; '.join(result.notes[1:])})" if len(result.notes) > 1 else ""
        say(f"{result.id}: kept, {len(result.kernels)} kernel(s){note}")
    return result


@dataclass(frozen=True)
class _Answer:
    """A sample past the model's stages: its code, or the stage it failed and why."""

    stages: list[str]
    code: prompt.Code | None
    failed: str = ""  # "<stage>: <why>"
    reply: str = ""


class _Writer:
    """Asks the model for a sample (main thread), then builds, runs and records it (workers)."""

    def __init__(
        self, dest: Path, options: SyntheticOptions, runner: Runner, run: bool, not_run: str
    ) -> None:
        self.dest, self.options, self.runner = dest, options, runner
        self.run, self.not_run = run, not_run
        self.generated = 0

    def ask(self, model: Model, sample: _Sample, snippet: str, seen: dict[str, str]) -> _Answer:
        variation = prompt.VARIATIONS[sample.variation]
        try:
            reply = model.complete(prompt.messages(snippet, variation), tools=[])
        except ModelError as err:
            if not self.generated:  # no answer yet: the model cannot be used at all
                raise SyntheticError(f"--model {self.options.model}: {err}") from err
            return _Answer([], None, f"generated: the model failed: {_one_line(str(err))}")
        self.generated += 1
        truncated = reply.raw.get("finish_reason") == "length"
        code = prompt.read_reply(reply.text, truncated)
        if isinstance(code, str):
            return _Answer(["generated"], None, f"parsed: {code}", reply.text)
        first = seen.setdefault(code.digest, sample.id)
        if first != sample.id:
            why = f"unique: the same code as {first}"
            return _Answer(["generated", "parsed"], code, why, reply.text)
        return _Answer(["generated", "parsed", "unique"], code, "", reply.text)

    def finish(self, sample: _Sample, answer: _Answer) -> _Outcome:
        """The sample's problem folder and Problem, or its Skip; recorded either way."""
        stages, failed, problem = list(answer.stages), answer.failed, None
        if not failed and answer.code is not None:
            outcome = self._make(sample, answer.code)
            stages += outcome.stages
            failed, problem = outcome.failed, outcome.problem
        digest = answer.code.digest if answer.code else ""
        if problem is None:
            record = {"stages": stages, "reason": failed, "digest": digest, "reply": answer.reply}
            write_atomic(self.dest / SKIPS / f"{sample.id}.json", json.dumps(record) + "\n")
            return Skip(SOURCE, sample.id, failed), stages
        return problem, stages

    def _make(self, sample: _Sample, code: prompt.Code) -> Built:
        staging = Path(tempfile.mkdtemp(dir=self.dest, prefix=f".tmp-{sample.id}-"))
        try:
            shutil.copytree(TEMPLATE, staging, dirs_exist_ok=True)
            region = sample.id.replace("-", "_")
            source = _kernel_source(sample, code, region, self.options.model)
            (staging / KERNEL_FILE).write_text(source, encoding="utf-8")
            found = scan(source.encode("utf-8"))
            if len(found.regions) != 1 or found.warnings:
                why = found.warnings[0].message if found.warnings else "no region found"
                return Built([], f"parsed: the region does not scan cleanly: {why}")
            span = found.regions[0]
            lines = (span.start_line, span.end_line)
            outcome = build_and_run(staging, self.runner, self.run, self.not_run, lines)
            if outcome.failed:
                return outcome
            notes = (f"written by {self.options.model} from {sample.snippet}",)
            problem = Problem(
                id=sample.id,
                source=SOURCE,
                benchmark=sample.id,
                regions=(f"{KERNEL_FILE}:{span.name}",),
                kernels=code.kernels,
                kind="single" if len(code.kernels) == 1 else "app",
                region_text=region_text(source.encode("utf-8"), span),
                notes=notes + outcome.notes,
                extra=self._extra(sample, outcome),
            )
            record = {"stages": outcome.stages, "digest": code.digest, "problem": problem.to_row()}
            write_atomic(staging / RECORD, json.dumps(record, indent=1, sort_keys=True) + "\n")
            os.rename(staging, self.dest / sample.id)
            return Built(outcome.stages, "", outcome.notes, problem)
        finally:
            shutil.rmtree(staging, ignore_errors=True)

    def _extra(self, sample: _Sample, outcome: Built) -> dict[str, Any]:
        extra: dict[str, Any] = {
            "model": self.options.model,
            "seed": self.options.seed,
            "sample": sample.index,
            "snippet": sample.snippet,
            "variation": prompt.VARIATIONS[sample.variation],
            "checked": "run" if self.run else "build",
        }
        if outcome.time_ms is not None:
            extra["time_ms"] = outcome.time_ms
        return extra


def _kernel_source(sample: _Sample, code: prompt.Code, region: str, model: str) -> str:
    includes = "".join(f"{line}\n" for line in code.includes)
    return (
        f"// Synthetic problem {sample.id}: the region was written by {model} from the\n"
        f"// inspiration snippet {sample.snippet}; main.cu is the fixed driver that calls launch.\n"
        f'#include "kernel.h"\n{includes}\n'
        f"// @optimize begin {region}\n{code.body}// @optimize end\n"
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())[:300]


__all__ = [
    "DEFAULT_CORPUS",
    "STAGES",
    "SyntheticError",
    "SyntheticOptions",
    "Tally",
    "import_synthetic",
]
