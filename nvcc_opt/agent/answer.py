"""The final answer: a JSON object {final_code, explanation, compile_args?}, found in model text."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

ANSWER_FORMAT = (
    '{"final_code": "<the whole rewritten region>", "explanation": "<what changed and why>", '
    '"compile_args": ["<optional extra nvcc flag>", ...]}'
)


class FinalAnswer(BaseModel):
    model_config = ConfigDict(extra="ignore", frozen=True)

    final_code: str
    explanation: str
    compile_args: list[str] = Field(default_factory=list)

    @field_validator("final_code")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must not be empty")
        return value


def json_objects(text: str) -> Iterator[dict[str, Any]]:
    """Each top-level JSON object in `text` (bare or inside a ``` fence), in order."""
    decoder = json.JSONDecoder()
    at = text.find("{")
    while at != -1:
        try:
            value, end = decoder.raw_decode(text, at)
        except json.JSONDecodeError:
            at = text.find("{", at + 1)
            continue
        if isinstance(value, dict):
            yield value
        at = text.find("{", end)


def find_answer(text: str) -> FinalAnswer | str | None:
    """The final answer in `text`; or what is wrong with it; or None when there is none."""
    for found in json_objects(text):
        if "final_code" in found:
            try:
                return FinalAnswer.model_validate(found)
            except ValidationError as exc:
                return _problem(exc)
    if '"final_code"' in text:
        return (
            "your final answer is not valid JSON (inside JSON strings, write newlines as \\n "
            f'and escape quotes as \\"). Send it again as one JSON object: {ANSWER_FORMAT}'
        )
    return None


def _problem(exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        field = ".".join(str(part) for part in error["loc"]) or "answer"
        problems.append(f"'{field}' {error['msg'].lower()}")
    return f"your final answer is invalid: {'; '.join(problems)}. Send it again as {ANSWER_FORMAT}"
