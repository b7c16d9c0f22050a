"""Verify a final answer independently, then store it as a *proposed* rewrite only if it passed.

The one path from "a model says this code is better" to the store: the code is rebuilt and
re-measured from scratch (`verify.final`) and only a passing verdict (see `final.PASSED`) is stored,
with the context it was verified in and the verification itself.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from nvcc_opt import report
from nvcc_opt.agent.answer import FinalAnswer
from nvcc_opt.agent.trace import TraceError, load_trace
from nvcc_opt.change_kind import unchanged
from nvcc_opt.config import ProjectConfig
from nvcc_opt.records import CompileContext, NewRewrite
from nvcc_opt.store.api import Store
from nvcc_opt.tools.region import Region, RegionNotFound
from nvcc_opt.verify import final
from nvcc_opt.verify.verdict import Verdict
from nvcc_opt.workspace.runner import Runner


@dataclass(frozen=True)
class Answer:
    """A final answer for one region and where it came from."""

    code: str
    explanation: str
    compile_args: tuple[str, ...]
    model: str
    trace: object
    origin: str


@dataclass(frozen=True)
class Submitted:
    verdict: Verdict
    notes: tuple[str, ...]  # what could not be checked here (no sanitizer, ...)
    rewrite_id: int | None  # None: nothing was stored

    @property
    def stored(self) -> bool:
        return self.rewrite_id is not None


def verify_and_store(
    store: Store,
    config: ProjectConfig,
    region: Region,
    answer: Answer,
    *,
    runner: Runner,
    launcher: str,
) -> Submitted:
    """Run the final verification of `answer`; store it as proposed only when it passed."""
    verdict, notes = final.verify_code(
        config, region, answer.code, list(answer.compile_args), runner=runner, launcher=launcher
    )
    if verdict.status not in final.PASSED or verdict.comparison is None:
        return Submitted(verdict, tuple(notes), None)
    context = last_context(store, region)
    comparison = verdict.comparison
    rewrite, _ = store.add_rewrite(
        NewRewrite(
            file=str(region.file),
            region_name=region.name,
            region_hash=region.text_hash,
            code=answer.code,
            explanation=answer.explanation,
            compile_args=answer.compile_args,
            targets=context.targets if context is not None and context.targets else None,
            context=context,
            statistics={"speedup": comparison.speedup, "p_value": comparison.p_value},
            model=answer.model,
            trace=answer.trace,
            origin=answer.origin,
        )
    )
    store.add_verification(final.record(rewrite.id, verdict, context, final.machine(runner), notes))
    return Submitted(verdict, tuple(notes), rewrite.id)


def last_context(store: Store, region: Region) -> CompileContext | None:
    """How the build last compiled this region's current text, if it has."""
    last = report.latest_compile_of_text(store, str(region.file), region.text_hash)
    return last.context if last is not None else None


def region_meta(region: Region) -> dict[str, str]:
    """What a trace records of its region, so that its final answer can be verified again later
    (`answer_of_trace`): the file, the region's name and the hash of the text it was asked about."""
    return {"file": str(region.file), "name": region.name, "hash": region.text_hash}


class TraceAnswerError(ValueError):
    """A trace whose final answer cannot be verified: the message says why, naming the file."""


def answer_of_trace(path: Path) -> tuple[Region, Answer]:
    """The region a trace of `optimize` was about, as it is now, and the trace's final answer.

    For a run whose final verification did not finish (killed, out of time, a crash inside
    nvcc-opt): the same full verification runs again on the answer, with no model call. The
    region must still hold the text the model was shown: an answer to other code is refused."""
    try:
        trace = load_trace(path)
    except TraceError as exc:
        raise TraceAnswerError(str(exc)) from exc
    where = trace.meta.get("region") if isinstance(trace.meta, dict) else None
    if not isinstance(where, dict) or not all(
        isinstance(where.get(k), str) for k in ("file", "name", "hash")
    ):
        raise TraceAnswerError(
            f"{path}: the trace names no region (nvcc-opt wrote none into traces before "
            "`verify --answer`): optimize the region again"
        )
    outcome = trace.outcome
    if not isinstance(outcome, dict):
        raise TraceAnswerError(
            f"{path}: the run stopped before its model answered: nothing to verify"
        )
    try:
        answer = FinalAnswer.model_validate(outcome.get("answer"))
    except ValidationError:
        reason = outcome.get("reason", "unknown")
        raise TraceAnswerError(
            f"{path}: the run ended without a valid final answer ({reason}): nothing to verify"
        ) from None
    try:
        region = Region.find(Path(where["file"]), where["name"])
    except RegionNotFound as exc:
        raise TraceAnswerError(f"{path}: {exc}") from exc
    if region.text_hash != where["hash"]:
        raise TraceAnswerError(
            f"{region.file}:{region.span.start_line}: region {region.name} changed since {path} "
            f"was written (hash {where['hash'][:12]}, now {region.text_hash[:12]}): its answer "
            "was written for other code; optimize the region again"
        )
    if unchanged(region.text, answer.final_code, answer.compile_args):
        raise TraceAnswerError(
            f"{path}: the final answer is the region unchanged: nothing to verify"
        )
    model = str(trace.meta.get("model", "unknown"))
    return region, Answer(
        answer.final_code,
        answer.explanation,
        tuple(answer.compile_args),
        model,
        json.loads(path.read_text(encoding="utf-8")),
        "verify --answer",
    )
