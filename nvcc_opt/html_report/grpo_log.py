"""The GRPO step log (`nvcc-opt train grpo` writes OUT/grpo_steps.jsonl, one JSON object per
step): what the reward-curve section draws. A line off the schema is one error naming the file
and the line."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nvcc_opt.html_report.inputs import InputError

MAX_BYTES = 256 * 1024 * 1024


class GrpoStep(BaseModel):
    model_config = ConfigDict(frozen=True, extra="ignore")

    step: int = Field(ge=0)
    rollouts: int = Field(ge=0)
    reward_mean: float
    r_perf_mean: float
    r_tools_mean: float
    valid_answer_share: float = Field(ge=0, le=1)


def load_grpo(path: Path) -> list[GrpoStep]:
    try:
        if path.stat().st_size > MAX_BYTES:
            raise InputError(f"{path}: larger than {MAX_BYTES >> 20} MiB; not a GRPO step log")
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise InputError(f"{path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise InputError(f"{path}: not UTF-8 text; not a GRPO step log") from None
    steps = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            steps.append(GrpoStep.model_validate(json.loads(line)))
        except ValueError as exc:  # JSONDecodeError and ValidationError
            why = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else "not JSON"
            raise InputError(
                f"{path}:{number}: not a GRPO step record ({why}); `nvcc-opt train grpo` "
                "writes OUT/grpo_steps.jsonl"
            ) from None
    if not steps:
        raise InputError(f"{path}: no step records; `nvcc-opt train grpo` writes one per step")
    return sorted(steps, key=lambda s: s.step)
