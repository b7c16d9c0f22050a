"""PTX text cut into the pieces `ptx_facts` reads. Pure: text in.

`plain` drops comments, debug sections and the module directives that end without `;`;
`top_level` splits what is left into declarations (ending in `;` outside any body) and function
definitions, each body a list of `Statement`s with the { } block each is in; `instruction_of`
reads one statement's opcode and operands (labels and guard predicates dropped).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

_COMMENTS = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_DEBUG_SECTION = re.compile(r"\.section\s+[^\s{]+\s*\{[^{}]*\}", re.DOTALL)
# Module directives that end without a semicolon.
_MODULE_DIRECTIVE = re.compile(r"^\s*\.(?:version|target|address_size|file|loc)\b.*$", re.MULTILINE)
_SEPARATORS = re.compile(r"[{};]")
_FUNCTION = re.compile(r"\.(?:entry|func)\s*(?:\([^)]*\))?\s*([\w$]+)")
_LABEL = re.compile(r"\s*[\w$]+:(?!:)\s*")
_GUARD = re.compile(r"@!?%[\w$]+\s+")


@dataclass
class Statement:
    text: str
    block: int  # the innermost { } block it is in; 0: the function's body


@dataclass
class Function:
    name: str
    statements: list[Statement]
    calls: set[str] = field(default_factory=set)


def plain(text: str) -> str:
    """The PTX without comments, debug sections and the directives that end without `;`."""
    return _MODULE_DIRECTIVE.sub("", _DEBUG_SECTION.sub("", _COMMENTS.sub("", text)))


def top_level(text: str) -> Iterable[tuple[str, Function | None]]:
    """Declarations (ending in `;` outside any body) and function definitions."""
    header, blocks, initializer, start = "", 0, 0, 0
    body: list[Statement] = []
    stack: list[int] = []
    for match in _SEPARATORS.finditer(text):
        piece, char = text[start : match.start()], match.group()
        start = match.end()
        if stack:  # in a function's body: statements, and { } blocks (call sequences, asm)
            if piece.strip():
                body.append(Statement(piece.strip(), stack[-1]))
            if char == "{":
                blocks += 1
                stack.append(blocks)
            elif char == "}":
                stack.pop()
                if not stack:
                    named = _FUNCTION.search(header)
                    if named:
                        yield "", Function(named.group(1), body)
                    header, body = "", []
            continue
        header += piece
        if initializer or (char == "{" and "=" in header):  # a variable's {...} initializer
            header += char
            initializer += {"{": 1, "}": -1}.get(char, 0)
        elif char == ";":
            yield header, None
            header = ""
        elif char == "{":
            stack, blocks, body = [0], 0, []


def instruction_of(statement: Statement) -> tuple[str, list[str]] | None:
    """(opcode, operands) of an instruction; None for a directive."""
    text = statement.text
    if label := _LABEL.match(text):
        text = text[label.end() :]
    if guard := _GUARD.match(text):
        text = text[guard.end() :]
    if not text or text.startswith("."):
        return None
    opcode, *rest = text.split(None, 1)
    return opcode, _operands(rest[0] if rest else "")


def _operands(text: str) -> list[str]:
    parts, depth, current = [], 0, ""
    for char in text:
        if char in "[({":
            depth += 1
        elif char in "])}":
            depth -= 1
        if char == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current.strip())
    return parts
