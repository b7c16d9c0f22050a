"""The git commit of a user's checkout, only when the checkout is its own repository's top.

A folder copied into another repository (or left untracked inside one) would otherwise report
that repository's HEAD as its version: a parent's commit is not the checkout's.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path


def own_commit(root: Path) -> str:
    """HEAD of the repository whose top is `root`; "" when `root` is not such a top."""
    try:
        done = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "--show-toplevel", "HEAD"],
            capture_output=True, text=True, timeout=30, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired):
        return ""
    lines = done.stdout.split()
    if done.returncode != 0 or len(lines) != 2 or Path(lines[0]).resolve() != root.resolve():
        return ""
    return lines[1] if re.fullmatch(r"[0-9a-f]{40}", lines[1]) else ""
