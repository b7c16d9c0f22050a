"""The lines a `search` or `file_viewer` observation shows (`   12 | code`), as the search policy
reads them: the code alone, with its file and line number, or joined into one statement."""

from __future__ import annotations

from collections.abc import Iterable


def search_lines(observation: str) -> list[str]:
    """The code of each matching line in a `search` tool observation (`   12 | code`)."""
    lines = []
    for line in observation.splitlines():
        number, bar, code = line.partition(" | ")
        if bar and number.strip().isdigit():
            lines.append(code)
    return lines


def search_hits(observation: str) -> list[tuple[str, int, str]]:
    """(file, line number, code) of each matching line in a `search` observation, whose files
    head their lines as `path (count)`."""
    hits, path = [], ""
    for line in observation.splitlines():
        number, bar, code = line.partition(" | ")
        if bar and number.strip().isdigit():
            hits.append((path, int(number), code))
        elif line.endswith(")") and " (" in line and not line.startswith("["):
            path = line.rsplit(" (", 1)[0]
    return hits


def statement(lines: Iterable[str]) -> str:
    """The lines up to the first that ends a statement (`;`), joined: a launch written over
    several lines, as file_viewer shows them from its first line."""
    taken = []
    for line in lines:
        taken.append(line.strip())
        if ";" in line:
            break
    return " ".join(taken)
