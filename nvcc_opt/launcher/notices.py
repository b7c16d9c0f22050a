"""What the launcher says and how it shows a path: notices on stderr (a path's bytes that are not
UTF-8 come out as they are, as nvcc's do), a path as printable text, and whether the store can
hold a path at all."""

from __future__ import annotations

import sys


def notice(message: str) -> None:
    say(f"nvcc-opt: {message}\n")


def say(text: str) -> None:
    """Write to stderr; a path's bytes that are not UTF-8 come out as they are, as nvcc's do."""
    buffer = getattr(sys.stderr, "buffer", None)
    if buffer is None:  # a text-only stream (embedded): its own error handler decides
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    sys.stderr.flush()
    buffer.write(data)
    buffer.flush()


def shown(path: str) -> str:
    """A path as printable text (bytes that are not UTF-8 as \\xNN), for messages kept as text."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def storable(path: str) -> bool:
    """Whether the store (SQLite text) can hold `path`: not when it is not UTF-8."""
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return True
