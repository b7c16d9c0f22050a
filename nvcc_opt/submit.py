"""Verify a final answer independently, then store it as a *proposed* rewrite only if it passed.

The one path from "a model says this code is better" to the store: the code is rebuilt and
re-measured from scratch (`verify.final`) and only a passing verdict (see `final.PASSED`) is stored,
with the context it was verified in and the verification itself.
"""

from __future__ import annotations

from dataclasses import dataclass

from nvcc_opt import report
from nvcc_opt.config import ProjectConfig
from nvcc_opt.records import CompileContext, NewRewrite
from nvcc_opt.store.api import Store
from nvcc_opt.tools.region import Region
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
