"""The GPU code a compile puts in its object, from its `-arch`, `-code` and `-gencode` values
(pure: no I/O), as measured against nvcc 13.0."""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


def normalise_targets(
    arch: str | None, codes: Sequence[str], gencodes: Sequence[str]
) -> tuple[str, ...]:
    """What ends up in the object: the -code values, or the -arch shorthand, plus each -gencode."""
    found: set[str] = set()
    if codes:
        found.update(codes)
    elif arch is not None:
        found.update(_arch_shorthand(arch))
    for spec in gencodes:
        found.update(_gencode_codes(spec))
    return tuple(sorted(found))


def _arch_shorthand(arch: str) -> tuple[str, ...]:
    """`-arch=sm_90` means compute_90 plus sm_90; a virtual or special value stands for itself."""
    if arch.startswith("sm_"):
        return ("compute_" + arch[3:], arch)
    return (arch,) if arch else ()


def _gencode_codes(spec: str) -> tuple[str, ...]:
    """Codes of `arch=compute_90,code=[compute_90,sm_90]` (brackets or double quotes)."""
    arch = ""
    codes: list[str] = []
    key = ""
    for item in spec.translate({ord(c): None for c in '"[]'}).split(","):
        name, eq, value = item.partition("=")
        if eq:
            key, item = name.strip(), value
        if key == "code" and item.strip():
            codes.append(item.strip())
        elif key == "arch":
            arch = item.strip()
    return tuple(codes) or _arch_shorthand(arch)
