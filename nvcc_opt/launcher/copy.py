"""The private copy of a source with accepted rewrites spliced in.

Its path is deterministic and private to one object file (`<objdir>/.nvcc-opt/<obj>/<name>`), so
parallel compiles never share a copy; it keeps the original file name, and it is written
atomically (temporary file, then rename) so a killed compile never leaves half a file.
"""

from __future__ import annotations

import os

from nvcc_opt.regions.splice import splice

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
) -> str:
    content = splice(source, [(span, rewrite.code) for span, rewrite in applied], spelling)
    path = copy_path(spelling, output, cwd)
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
