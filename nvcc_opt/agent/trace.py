"""The trace of one agent run, rewritten atomically after every step so a crash loses nothing.

File format (JSON), read by training:
    {"format": "nvcc-opt/trace", "version": 1,
     "meta": {...},               # model, tools, tool_schemas, limits, and what the caller adds
     "messages": [...],           # the conversation exactly as the model saw it
     "steps": [{"turn", "model_s", "prompt_tokens", "completion_tokens", "text", "raw",
                "calls": [{"id", "name", "arguments", "source", "result", "error", "seconds"}],
                "problems": [...], "note"}],
     "outcome": {"reason", "message", "answer", "turns", "tokens", ...} | null}
"""

from __future__ import annotations

import json
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

TRACE_FORMAT = "nvcc-opt/trace"
TRACE_VERSION = 1


class TraceError(ValueError):
    """A file that is not a trace this version can read."""


@dataclass
class Trace:
    meta: dict[str, Any]
    messages: list[dict[str, Any]]
    steps: list[dict[str, Any]]
    outcome: dict[str, Any] | None

    def to_json(self) -> dict[str, Any]:
        return {
            "format": TRACE_FORMAT,
            "version": TRACE_VERSION,
            "meta": self.meta,
            "messages": self.messages,
            "steps": self.steps,
            "outcome": self.outcome,
        }


class TraceWriter:
    """Collects a run's events; `save` writes them all, replacing the file atomically.

    Steps are kept by reference, so a step dict filled in as the step runs is saved as far as it
    got (an interrupted tool call shows up with no result).
    """

    def __init__(self, path: Path, meta: dict[str, Any] | None = None) -> None:
        self.path = path
        self.trace = Trace(dict(meta or {}), [], [], None)

    def add_meta(self, **meta: Any) -> None:
        self.trace.meta.update(meta)

    def add_message(self, message: dict[str, Any]) -> None:
        self.trace.messages.append(message)

    def add_step(self, step: dict[str, Any]) -> None:
        self.trace.steps.append(step)

    def set_outcome(self, outcome: dict[str, Any]) -> None:
        self.trace.outcome = outcome

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=f".{self.path.name}.")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump(self.trace.to_json(), out, indent=1, default=str)
            os.replace(tmp, self.path)
        except BaseException:
            os.unlink(tmp)
            raise


def load_trace(path: Path) -> Trace:
    """The trace in `path`; TraceError when it is not JSON of this format and version."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise TraceError(f"{path}: cannot read a trace: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        raise TraceError(f"{path}: not an {TRACE_FORMAT} file")
    if data.get("version") != TRACE_VERSION:
        raise TraceError(
            f"{path}: trace version {data.get('version')!r}; this nvcc-opt reads {TRACE_VERSION}"
        )
    return Trace(data["meta"], data["messages"], data["steps"], data["outcome"])
