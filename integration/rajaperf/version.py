"""Which RAJAPerf a checkout is, and whether its submodules are there.

The version is what the checkout's CMakeLists.txt declares (RAJA_PERFSUITE_VERSION_*), with the
git commit where git can tell it, and RAJA's (tpl/RAJA). Only versions whose CUDA 13 fixes were
found by compiling them are known; another is named and refused (or, with force, prepared with
a warning that the fixes may not be the ones it needs).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from integration.gitcommit import own_commit

# version -> where its fixes were found (fixes.py); the kernels table (kernels.py) is that version's
KNOWN = {
    "2024.07.0": "v2024.07.0 and develop up to 9af20b3 (2024-10-10), RAJA v2024.07.0 (378199a)",
}
SUBMODULES = {
    "blt": "blt/SetupBLT.cmake",
    "RAJA": "tpl/RAJA/CMakeLists.txt",
    "camp": "tpl/RAJA/tpl/camp/CMakeLists.txt",
}
GROUPS = ("src/apps", "src/algorithm", "src/polybench")


class VersionError(ValueError):
    """Not a RAJAPerf checkout this integration knows; the message names what it found."""


@dataclass(frozen=True)
class Version:
    suite: str  # e.g. 2024.07.0
    commit: str  # git HEAD, or "" where git cannot tell
    raja: str  # RAJA's declared version, or ""

    @property
    def known(self) -> bool:
        return self.suite in KNOWN

    def describe(self) -> str:
        commit = f" ({self.commit[:9]})" if self.commit else ""
        raja = f", RAJA {self.raja}" if self.raja else ""
        return f"RAJAPerf {self.suite}{commit}{raja}"


def _declared(cmakelists: Path, prefix: str) -> str:
    if not cmakelists.is_file():
        return ""
    text = cmakelists.read_text(encoding="utf-8", errors="replace")
    parts = []
    for part in ("MAJOR", "MINOR", "PATCHLEVEL"):
        found = re.search(rf"set\(\s*{prefix}_VERSION_{part}\s+(\w+)\s*\)", text)
        if not found:
            return ""
        parts.append(found.group(1))
    return ".".join(parts)


def detect(root: Path) -> Version:
    """The checkout's version; VersionError when `root` is not a RAJAPerf checkout at all or
    its submodules are missing."""
    top = root / "CMakeLists.txt"
    missing = [g for g in GROUPS if not (root / g).is_dir()]
    if not top.is_file() or missing:
        lacking = "CMakeLists.txt" if not top.is_file() else missing[0]
        raise VersionError(f"{root}: not a RAJAPerf checkout (no {lacking})")
    suite = _declared(top, "RAJA_PERFSUITE")
    if not suite:
        raise VersionError(f"{top}: declares no RAJA_PERFSUITE_VERSION_MAJOR/MINOR/PATCHLEVEL")
    absent = [name for name, path in SUBMODULES.items() if not (root / path).is_file()]
    if absent:
        raise VersionError(
            f"{root}: submodule(s) {', '.join(absent)} missing; run"
            " `git submodule update --init --recursive` in the checkout"
        )
    return Version(suite, own_commit(root), _declared(root / SUBMODULES["RAJA"], "RAJA"))


def check_known(version: Version, force: bool) -> str | None:
    """None for a known version; for another, a warning with `force`, else VersionError."""
    if version.known:
        return None
    known = "; ".join(f"{v}: {where}" for v, where in KNOWN.items())
    message = (
        f"{version.describe()} is not a version whose CUDA 13 fixes are known (known: {known})"
    )
    if not force:
        raise VersionError(message + "; --force prepares it anyway, with the fixes that apply")
    return "warning: " + message + "; prepared anyway (--force): check the build's errors"
