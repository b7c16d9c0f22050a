"""Tag LULESH's kernel with `// @optimize`, and take the tag away again (pure: text in and out).

The tag is two lines above the kernel's `__global__`: a comment that says who added it and how
to remove it, and the pragma. `untag` removes exactly those two lines, so `untag(tag(t)) == t`.
"""

from __future__ import annotations

from integration.lulesh.output import KERNEL
from nvcc_opt.regions.scan import scan

NOTE = "// integration.lulesh: tag for nvcc-opt; `python -m integration.lulesh untag` removes it"
PRAGMA = "// @optimize"
# What may stand between `__global__` and `void KERNEL(` in the head of its definition.
_HEAD = ("#if", "#else", "#elif", "#endif", "__launch_bounds__", "//")


class TagError(ValueError):
    """The kernel cannot be tagged (or untagged) in this text."""


def is_tagged(text: str) -> bool:
    return NOTE in text.splitlines()


def tag(text: str) -> str:
    """`text` with the kernel tagged; unchanged when already tagged."""
    if is_tagged(text):
        return text
    lines = text.splitlines(keepends=True)
    define = [i for i, ln in enumerate(lines) if f"void {KERNEL}(" in ln]
    if len(define) != 1:
        raise TagError(f"{len(define)} definitions of {KERNEL} (expected one)")
    start = define[0]
    if "__global__" not in lines[start]:
        head = start - 1
        while head >= 0 and lines[head].strip().startswith(_HEAD):
            head -= 1
        if head < 0 or lines[head].strip() != "__global__":
            raise TagError(f"no __global__ line just above {KERNEL} (line {start + 1})")
        start = head
    newline = "\r\n" if lines[start].endswith("\r\n") else "\n"
    tagged = "".join([*lines[:start], NOTE + newline, PRAGMA + newline, *lines[start:]])
    _check_region(tagged)
    return tagged


def untag(text: str) -> str:
    """`text` without the tag `tag` added; unchanged when there is none."""
    lines = text.splitlines(keepends=True)
    at = [i for i, ln in enumerate(lines) if ln.rstrip("\r\n") == NOTE]
    if not at:
        return text
    i = at[0]
    if len(at) > 1 or i + 1 >= len(lines) or lines[i + 1].rstrip("\r\n") != PRAGMA:
        raise TagError(f"line {i + 1}: the tag was edited; remove it by hand")
    return "".join(lines[:i] + lines[i + 2 :])


def _check_region(text: str) -> None:
    """The pragma must make exactly the kernel a region, as nvcc-opt's build will see it."""
    found = scan(text.encode("utf-8", errors="surrogateescape"))
    names = [r.name for r in found.regions]
    if KERNEL not in names:
        warnings = "; ".join(str(w) for w in found.warnings) or "no region"
        raise TagError(f"nvcc-opt does not see {KERNEL} as a region after tagging: {warnings}")
