"""Build the private copy of a source file with rewrites in place of its regions (pure).

Bytes outside the regions are copied unchanged; `#line` directives keep every line outside the
regions at its original number and file name, so diagnostics, `__LINE__`, `__FILE__`, `assert`
and debug info all point at the original file. A UTF-8 byte order mark stays the copy's first
bytes, before the first `#line` (anywhere else it is a stray character to the compiler).
"""

from __future__ import annotations

from nvcc_opt.regions.lexer import DIRECTIVE, UNTERMINATED, bom_length, tokenize
from nvcc_opt.values import RegionSpan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def splice(source: bytes, replacements: Sequence[tuple[RegionSpan, str]], line_path: str) -> bytes:
    """`source` with each span's lines replaced by its code, wrapped in `#line` directives.

    Raises ValueError for spans that overlap or do not fit `source`, and for code that would
    swallow or override the `#line` that follows it; the caller then compiles the original.
    """
    if "\n" in line_path or "\r" in line_path:
        raise ValueError("a #line file name cannot hold a line break")
    path = line_path.replace("\\", "\\\\").replace('"', '\\"')
    position = bom_length(source)
    parts = [source[:position], _line(1, path)]
    for span, code in sorted(replacements, key=lambda r: r[0].start_offset):
        _check_span(source, span, position)
        parts.append(source[position : span.start_offset])
        parts.append(_line(span.start_line, path))
        parts.append(_checked_code(code, span.name))
        parts.append(_line(span.end_line + 1, path))
        position = span.end_offset
    parts.append(source[position:])
    return b"".join(parts)


def _line(number: int, escaped_path: str) -> bytes:
    # surrogateescape gives back the exact bytes of a non-UTF-8 file name
    return f'#line {number} "{escaped_path}"\n'.encode("utf-8", "surrogateescape")


def _check_span(source: bytes, span: RegionSpan, previous_end: int) -> None:
    if span.start_offset < bom_length(source):
        raise ValueError(f"region {span.name!r} starts inside the byte order mark")
    if span.start_offset < previous_end:
        raise ValueError(f"region {span.name!r} overlaps the region before it")
    if not span.start_offset <= span.end_offset <= len(source):
        raise ValueError(f"region {span.name!r} does not fit the source ({len(source)} bytes)")
    starts_line = span.start_offset == bom_length(source) or source[span.start_offset - 1] == 10
    ends_line = span.end_offset == len(source) or source[span.end_offset - 1] == 10
    if not (starts_line and ends_line):
        raise ValueError(f"region {span.name!r} does not cover whole lines")
    if source.endswith((b"\\\n", b"\\\r\n"), 0, span.start_offset):
        raise ValueError(f"the line before region {span.name!r} continues into it")


def _checked_code(code: str, name: str) -> bytes:
    """The rewrite as UTF-8 ending in a newline, if it leaves the next line alone."""
    data = code.encode("utf-8")
    if not data.endswith(b"\n"):
        data += b"\n"
    if data.endswith((b"\\\n", b"\\\r\n")):
        raise ValueError(f"rewrite of {name!r} ends with a line continuation")
    for kind, start, end in tokenize(data):
        if kind == UNTERMINATED:
            raise ValueError(f"rewrite of {name!r} has an unterminated comment or raw string")
        if kind == DIRECTIVE and _is_line_directive(data[start + 1 : end]):
            raise ValueError(f"rewrite of {name!r} has its own #line directive")
    return data


def _is_line_directive(after_hash: bytes) -> bool:
    """`#line N` or the GNU form `# N "file"`."""
    words = after_hash.split(None, 1)
    return bool(words) and (words[0] == b"line" or words[0][:1].isdigit())
