"""A deterministic model for tests: it plays back a script and records what it was shown."""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from nvcc_opt.agent.model import ModelError, Reply

Scripted = Reply | Callable[[list[dict[str, Any]]], Reply]


class ScriptedModel:
    """Returns the script's replies in order; a callable entry sees the messages and answers."""

    def __init__(self, replies: Sequence[Scripted], name: str = "scripted") -> None:
        self.name = name
        self.replies = list(replies)
        self.seen: list[list[dict[str, Any]]] = []  # the messages of each call, as they were then
        self.tools_seen: list[list[dict[str, Any]]] = []

    def complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]]) -> Reply:
        self.seen.append(copy.deepcopy(messages))
        self.tools_seen.append(copy.deepcopy(tools))
        if len(self.seen) > len(self.replies):
            raise ModelError(f"the script has only {len(self.replies)} replies")
        entry = self.replies[len(self.seen) - 1]
        return entry(messages) if callable(entry) else entry
