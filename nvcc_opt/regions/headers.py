"""Regions the launcher never substitutes: those of a header.

The launcher scans and substitutes the file nvcc compiles (a translation unit's main source
file), not the headers it includes. A region tagged in a header is therefore recorded by no
build, and a rewrite of it, accepted or not, would never be applied: `optimize` refuses it and
`explain` says so, rather than let a change look applied that no build makes.
"""

from __future__ import annotations

from pathlib import Path

HEADER_SUFFIXES = frozenset({".cuh", ".h", ".hpp", ".hh", ".hxx", ".inl"})


def is_header(file: Path | str) -> bool:
    """Whether `file` is named as a header (its suffix), whatever includes it."""
    return Path(file).suffix.lower() in HEADER_SUFFIXES


def never_substituted(file: Path | str) -> str:
    """Why a region of header `file`, which no build compiled as its main file, is never
    substituted; one line."""
    return (
        f"{file} is a header, and the launcher substitutes regions only in the file nvcc "
        "compiles: a rewrite of this region would never be applied (move the kernel into the "
        ".cu file that includes it)"
    )
