"""Where the allowlist's copy of the region's file is preprocessed: beside the build's own copy.

The preprocessor can ask where it is: `__has_include("x")` (spelled out, through a macro or
pasted together: no reading of the text finds every form) looks first in the folder of the file
being compiled, and a quoted `#include` too. A copy preprocessed in a scratch folder of its own
answers such questions differently from the build's copy, so a candidate could show the
allowlist one code (`#if __has_include("<the scratch copy's name>")`) and the build another
(issue: red-team class `preprocessor`, `checker_sees_the_original`). So the copy goes into the
folder where the launcher writes the build's (`launcher/copy.beside_path`, in the tree whose
compile it is), under an unguessable name, and a file with the build's copy's name is there
while it is read (the build's own, or an empty stand-in, left there: the launcher replaces the
copy by rename before every compile, and removing it could race with that): every name a
candidate can spell resolves alike in both. Line numbers match as well (`preprocess._spliced`).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator
from pathlib import Path

from nvcc_opt.launcher.copy import beside_path

PREFIX = ".nvcc-opt-check-"  # + random hex + the source's extension


@contextlib.contextmanager
def beside_build(source: str, output: str | None, directory: Path, data: bytes) -> Iterator[Path]:
    """`data` written beside the build's copy of `source` (compiled to `output` in `directory`),
    under a name no candidate can know; removed on exit."""
    ours = Path(beside_path(source, output, str(directory), PREFIX))
    try:
        ours.write_bytes(data)
        yield ours
    finally:
        ours.unlink(missing_ok=True)


def renumbered(text: str, name: str, skip: int) -> str:
    """Compiler messages of `text` that name `name:LINE`, with LINE less `skip` (the region's
    lines are numbered as in the build's copy; a message names the code's own line).

    >>> renumbered("m:12:3: error", "m", 10)
    'm:2:3: error'
    """
    return re.sub(f"{re.escape(name)}:(\\d+)", lambda m: f"{name}:{int(m[1]) - skip}", text)
