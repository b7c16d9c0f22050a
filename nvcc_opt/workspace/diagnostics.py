"""Build output trimmed to what matters: the first errors, with their context (pure).

Understands nvcc's front end (`file(LINE): error: ...` then the source line and a caret), gcc and
clang (`file:LINE:COL: error: ...` then `LINE | code` and `| ^~~` lines, and `note:`s), and tools
without a location (ptxas, nvlink, ld, collect2, nvcc-opt's own messages). Build-tool chatter
(ninja, make, warnings, "N errors detected") is dropped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

_LOCATED = re.compile(
    r"^(?P<file>[^\s:(][^:(]*?)(?:\((?P<nvcc_line>\d+)\)|:(?P<gcc_line>\d+)(?::\d+)?): "
    r"(?P<kind>(?:catastrophic |fatal )?error|warning|note|remark)\b"
)
_UNLOCATED = re.compile(
    r"^(?:\S*/)?(?:ptxas|nvlink|fatbinary|nvcc|ld|collect2)\b.*\b(?:error|fatal)\b"
    r"|undefined reference to|multiple definition of|^nvcc-opt: |^CMake Error"
)
CONTEXT_LINES = 5  # per error: nvcc shows 2 (code, caret), gcc 2 to 4
TAIL_LINES = 20  # shown when no line looks like an error


def trim_errors(
    output: str,
    *,
    source: Path | None,
    region_lines: tuple[int, int] | None,
    limit: int = 20,
) -> str:
    """The first `limit` distinct errors of `output`, each with its context lines, and how many
    more there were. Errors in `source` between `region_lines` (inclusive) get "(region line K)",
    K counted from 1 at the region's first line. No error lines: the output's last lines."""
    errors = _errors(output.splitlines(), source, region_lines)
    if not errors:
        tail = [line for line in output.splitlines() if line.strip()][-TAIL_LINES:]
        return "\n".join(tail)
    shown = [line for block in errors[:limit] for line in block]
    if len(errors) > limit:
        shown.append(f"[{len(errors) - limit} more errors not shown]")
    return "\n".join(shown)


def _errors(
    lines: list[str], source: Path | None, region: tuple[int, int] | None
) -> list[list[str]]:
    blocks: list[list[str]] = []
    seen: set[str] = set()
    current: list[str] | None = None
    for line in lines:
        located = _LOCATED.match(line)
        if located and located["kind"] == "note" and current is not None:
            current.append(_mark(line, located, source, region))
        elif located and "error" in located["kind"] or not located and _UNLOCATED.search(line):
            current = None
            if line not in seen:
                seen.add(line)
                current = [_mark(line, located, source, region)] if located else [line]
                blocks.append(current)
        elif current is not None and line[:1].isspace() and line.strip():
            if len(current) <= CONTEXT_LINES:
                current.append(line)
        else:
            current = None
    return blocks


def _mark(
    line: str, found: re.Match[str] | None, source: Path | None, region: tuple[int, int] | None
) -> str:
    if found is None or source is None or region is None:
        return line
    number = int(found["nvcc_line"] or found["gcc_line"])
    if not (region[0] <= number <= region[1] and _same_file(found["file"], source)):
        return line
    return f"{line} (region line {number - region[0] + 1})"


def _same_file(named: str, source: Path) -> bool:
    """Compilers name files as given: absolute, or relative to a folder we may not know."""
    named = os.path.normpath(named)
    full = os.path.normpath(str(source))
    return named == full or (not os.path.isabs(named) and full.endswith(os.sep + named))
