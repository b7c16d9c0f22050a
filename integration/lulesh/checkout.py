"""Find LULESH 2.0.2-dev's CUDA port in a user's checkout, and name what else it is.

Detection is by content, not by branch name: the cuda/src files the Makefile builds, the kernel
this integration tags, and the output lines its checks read. A checkout that lacks any of them is
refused with one line that names the layout found.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from integration.gitcommit import own_commit
from integration.lulesh.output import KERNEL

SOURCES = ("allocator.cu", "lulesh.cu", "lulesh-comms.cu", "lulesh-comms-gpu.cu")
HEADERS = ("allocator.h", "lulesh.h", "util.h", "vector.h", "sm_utils.inl")
# printf formats of VerifyAndWriteFinalOutput that output.parse reads.
PRINTED = ("Run completed", "Iteration count", "Final Origin Energy", "MaxAbsDiff",
           "Elapsed time", "Grind time")  # fmt: skip
EXPECTED = "LULESH branch 2.0.2-dev with cuda/src"


class CheckoutError(ValueError):
    """Not a checkout this integration works on; the message names what was found."""


@dataclass(frozen=True)
class Checkout:
    root: Path  # the folder given
    src: Path  # its cuda/src
    commit: str  # git HEAD, or "" when not a git checkout

    @property
    def kernel_file(self) -> Path:
        return self.src / "lulesh.cu"


def find(path: Path) -> Checkout:
    """The CUDA port under `path` (the repository, its cuda/ or cuda/src folder)."""
    path = path.expanduser().resolve()
    if not path.is_dir():
        raise CheckoutError(f"{path}: not a folder")
    for src in (path / "cuda" / "src", path / "src", path):
        if (src / "lulesh.cu").is_file():
            break
    else:
        raise CheckoutError(f"{path}: {_layout(path)}; expected {EXPECTED}")
    missing = [n for n in (*SOURCES, *HEADERS) if not (src / n).is_file()]
    if missing:
        raise CheckoutError(
            f"{src}: lacks {', '.join(missing)}: not the 2.0.2-dev CUDA layout ({EXPECTED})"
        )
    text = (src / "lulesh.cu").read_text(encoding="utf-8", errors="replace")
    if f"void {KERNEL}(" not in text:
        raise CheckoutError(f"{src / 'lulesh.cu'}: no {KERNEL} definition; expected {EXPECTED}")
    unprinted = [p for p in PRINTED if p not in text]
    if unprinted:
        raise CheckoutError(
            f"{src / 'lulesh.cu'}: prints no {', '.join(repr(p) for p in unprinted)}: another "
            f"version's output; expected {EXPECTED}"
        )
    return Checkout(path, src, own_commit(path))


def _layout(path: Path) -> str:
    """A short name for what is at `path` instead of the CUDA port."""
    if (path / "lulesh.cc").is_file():
        return "a LULESH CPU layout (lulesh.cc, no cuda/src: master or 2.0 release)"
    if (path / "cuda").is_dir():
        return "a cuda/ folder without src/lulesh.cu"
    names = sorted(p.name for p in path.iterdir())[:8]
    return f"no lulesh.cu (holds {', '.join(names) or 'nothing'})"
