"""A region tagged in a header, moved into the one .cu file that includes it.

The launcher substitutes regions only in the file nvcc compiles (a translation unit's main
source file; README, "Regions"), so a kernel tagged in HeCBench's kernels.h is recorded by no
build and a problem made of it can never be optimized: `collect` ended such runs with "the build
recorded no region" (H100, 2026-12-07; 170 of the 598 train problems of the HeCBench set had
their region in a header). In the importer's own copy of the benchmark, the tagged header's text
takes the place of its `#include` line in the .cu file, where the launcher sees it.

Only where that is mechanical and keeps the program the same: the header is included once, by
one .cu file, from that file's own folder (so its own quoted includes resolve as before) and
through the including file's folder (not an -I path). Anything else is a reason, and the
importer skips the problem with it.
"""

from __future__ import annotations

import posixpath
import re

from nvcc_opt.bench.apps import REGION_SUFFIXES

# A quoted #include at the start of a line (angle-bracket includes never name the benchmark's
# own headers, and a commented-out `// #include` does not match).
INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*"([^"\n]+)"[^\n]*(?:\n|$)', re.MULTILINE)
PRAGMA_ONCE = re.compile(rb"^[ \t]*#[ \t]*pragma[ \t]+once[^\n]*\n?", re.MULTILINE)


def is_translation_unit(file: str) -> bool:
    """Whether the launcher sees regions of `file` (nvcc compiles it as a main source file)."""
    return posixpath.splitext(file)[1] in REGION_SUFFIXES


def _resolved(includer: str, target: bytes) -> str:
    folder = posixpath.dirname(includer)
    return posixpath.normpath(posixpath.join(folder, target.decode("utf-8", "replace")))


def inline_header(files: dict[str, bytes], header: str, text: bytes) -> tuple[str, bytes] | str:
    """(the .cu file, its text with `text` in place of its `#include` of `header`), or why the
    header cannot be moved. `files` are the benchmark's files by path relative to its folder."""
    includes = [
        (name, match)
        for name, source in files.items()
        if name != header
        for match in INCLUDE.finditer(source)
        if _resolved(name, match.group(1)) == header
    ]
    if not includes:
        return "no file of the benchmark includes it from its own folder"
    names = sorted({name for name, _ in includes})
    if len(includes) > 1:
        return f"included {len(includes)} times ({', '.join(names)}), not once"
    name, match = includes[0]
    if not is_translation_unit(name):
        return f"included by {name}, which is not a .cu file"
    if posixpath.dirname(name) != posixpath.dirname(header):
        own = [m.group(1).decode("utf-8", "replace") for m in INCLUDE.finditer(text)]
        if own:
            return f"in another folder than {name}, and its own includes ({own[0]}) would move"
    body = PRAGMA_ONCE.sub(b"", text)
    if not body.endswith(b"\n"):
        body += b"\n"
    mark = f"// nvcc-opt train problems: {header} inlined here (the launcher substitutes regions "
    mark += "only in the file nvcc compiles)\n"
    moved = mark.encode() + body + f"// end of {header}\n".encode()
    source = files[name]
    return name, source[: match.start()] + moved + source[match.end() :]
