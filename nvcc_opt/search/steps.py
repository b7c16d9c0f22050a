"""What the search policy's plan yields: a tool call, or the final answer."""

from __future__ import annotations

from collections.abc import Generator
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Call:
    name: str
    arguments: dict[str, Any]
    why: str


@dataclass(frozen=True)
class Final:
    code: str
    explanation: str
    compile_args: tuple[str, ...] = ()


Step = Call | Final
Plan = Generator[Step, str, None]
