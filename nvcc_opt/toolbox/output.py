"""Capping tool output: a model's context is finite, and a cut it cannot see misleads it."""

from __future__ import annotations

from typing import Literal

# About 10k tokens: room for several observations in one context window.
LIMIT_CHARS = 40_000
LIMIT_LINES = 500
NO_OUTPUT = "no output"


def cap(
    text: str,
    limit_chars: int = LIMIT_CHARS,
    limit_lines: int = LIMIT_LINES,
    keep: Literal["head", "both"] = "head",
) -> str:
    """`text` within the limits, with a note saying how much was cut; "no output" when empty.

    `keep="head"` keeps the beginning (listings, search results); `keep="both"` keeps the beginning
    and the end, cutting the middle (logs, where errors and summaries come last).

    >>> cap("a\\nb\\nc\\n", limit_lines=1)
    'a\\n[output cut: 2 more lines, 4 more characters]'
    """
    if not text.strip():
        return NO_OUTPUT
    if len(text) <= limit_chars and len(text.splitlines()) <= limit_lines:
        return text
    if keep == "head":
        head = _head(text, limit_lines, limit_chars)
        cut = text[len(head) :]
        return _line(head) + f"[output cut: {_count(cut, 'more')}]"
    head = _head(text, limit_lines // 2, limit_chars // 2)
    tail = _tail(text[len(head) :], limit_lines - limit_lines // 2, limit_chars - limit_chars // 2)
    middle = text[len(head) : len(text) - len(tail)]
    return _line(head) + f"[output cut: {_count(middle, '')} omitted here]\n" + tail


def _head(text: str, lines: int, chars: int) -> str:
    """The longest prefix of whole lines within both limits (part of a line if one is too long)."""
    kept = "".join(text.splitlines(keepends=True)[:lines])[:chars]
    if len(kept) < len(text) and "\n" in kept and not kept.endswith("\n"):
        kept = kept[: kept.rindex("\n") + 1]
    return kept


def _tail(text: str, lines: int, chars: int) -> str:
    """The longest suffix of whole lines within both limits."""
    if lines <= 0 or chars <= 0:
        return ""
    kept = "".join(text.splitlines(keepends=True)[-lines:])
    kept = kept[-chars:]
    if len(kept) < len(text) and text[-len(kept) - 1] != "\n" and "\n" in kept[:-1]:
        kept = kept[kept.index("\n") + 1 :]
    return kept


def _line(text: str) -> str:
    """`text` ending with a line break, so that a note starts on its own line."""
    return text if text == "" or text.endswith("\n") else text + "\n"


def _count(cut: str, word: str) -> str:
    lines = len(cut.splitlines())
    word = f"{word} " if word else ""
    return f"{lines} {word}line{'' if lines == 1 else 's'}, {len(cut)} {word}characters"
