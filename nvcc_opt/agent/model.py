"""The one small interface every model backend implements.

Messages are OpenAI-style dicts: {"role": "system"|"user"|"assistant"|"tool", "content": str,
"tool_calls": [...] (assistant), "tool_call_id": str (tool)}. Tools are OpenAI function schemas
(`nvcc_opt.toolbox.schema.Tool.schema()`).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it (may be malformed: the loop answers that)


@dataclass(frozen=True)
class Reply:
    text: str  # the assistant's text (reasoning and/or the final JSON answer)
    tool_calls: tuple[ToolCall, ...] = ()  # native tool calls; text-embedded ones are parsed later
    prompt_tokens: int = 0
    completion_tokens: int = 0
    raw: dict[str, Any] = field(default_factory=dict)  # backend-specific extras for the trace


class ModelError(RuntimeError):
    """The backend failed (server error, timeout, bad response); the message says what to do."""


class Model(Protocol):
    name: str

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        """One assistant turn. Raises ModelError."""
        ...
