"""The private copy of a source with accepted rewrites spliced in.

Its path is deterministic and private to one object file (`<objdir>/.nvcc-opt/<obj>/<name>`), so
parallel compiles never share a copy; it keeps the original file name, and it is written
atomically (temporary file, then rename) so a killed compile never leaves half a file.

A private tree's compile of one unit for analysis (workspace/unit.py: compiler_analysis and the
verification's object line, whose own object goes elsewhere) names the build's object in
`BESIDE`: its copy is then written into the build copy's folder under a name no candidate can
know, so that every file name the code can look up (`__has_include`, a quoted `#include`)
resolves as in the build's own compile, and a file with the build's copy's name is there.
"""

from __future__ import annotations

import contextlib
import os

from nvcc_opt.regions.splice import splice

BESIDE = "NVCC_OPT_COPY_BESIDE"  # the build's object (as its compile spells -o) in candidate mode
UNIT_PREFIX = ".nvcc-opt-unit-"

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from nvcc_opt.values import AcceptedRewrite, RegionSpan


def copy_path(source: str, output: str | None, cwd: str) -> str:
    obj = os.path.join(cwd, output) if output else os.path.join(cwd, os.path.basename(source))
    return os.path.join(
        os.path.dirname(obj), ".nvcc-opt", os.path.basename(obj), os.path.basename(source)
    )


def write_copy(
    source: bytes,
    applied: Sequence[tuple[RegionSpan, AcceptedRewrite]],
    spelling: str,
    output: str | None,
    cwd: str,
    beside: str | None = None,
) -> str:
    content = splice(source, [(span, rewrite.code) for span, rewrite in applied], spelling)
    path = (
        copy_path(spelling, output, cwd) if beside is None else beside_path(spelling, beside, cwd)
    )
    folder = os.path.dirname(path)
    os.makedirs(folder, exist_ok=True)
    temporary = os.path.join(folder, f".tmp-{os.getpid()}")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(content)
        os.replace(temporary, path)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    return path


def beside_path(
    spelling: str, build_output: str | None, cwd: str, prefix: str = UNIT_PREFIX
) -> str:
    """A fresh name (`prefix`, random hex, the source's extension) in the folder of the build's
    copy for `build_output`, with a file of the build copy's own name there (the build's, or an
    empty stand-in the build later replaces by rename): the place where a checker's copy
    resolves every name the code can look up as the build's copy does."""
    build_copy = copy_path(spelling, build_output, cwd)
    os.makedirs(os.path.dirname(build_copy), exist_ok=True)
    with contextlib.suppress(FileExistsError):  # never over the build's own copy
        os.close(os.open(build_copy, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644))
    name = f"{prefix}{os.urandom(8).hex()}{os.path.splitext(spelling)[1]}"
    return os.path.join(os.path.dirname(build_copy), name)
