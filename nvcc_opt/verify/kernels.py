"""Which kernels belong to a region, as the channel names them (base names). Pure.

A region's kernels are the `__global__` functions it defines and the kernels it launches with
`<<<...>>>`. The channel attributes GPU time and launches by these names; a name it cannot place
(a kernel launched under a name built by the preprocessor, say) counts as a kernel outside the
region, and a candidate may not launch any outside kernel the original run did not launch the
same number of times (verify/corroborate.py), so a misplaced name can only cost the candidate.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvcc_opt.regions.lexer import COMMENT, DIRECTIVE, STRING, tokenize
from nvcc_opt.verify.declarations import Function, Outline, Tok, merge_scopes

_MACRO = re.compile(r"^\s*#\s*define\b", re.MULTILINE)
_LAUNCH = re.compile(r"([A-Za-z_]\w*)\s*(?:<[^<>;{}]*(?:<[^<>;{}]*>[^<>;{}]*)*>)?\s*<<<")


@dataclass(frozen=True)
class RegionKernels:
    original: frozenset[str]  # the original region's kernels
    candidate: frozenset[str]  # the candidate's
    each_launch_a_call: bool  # the region has no host code: every launch of it is one call
    # The kernels of both regions when both are kernels alone: every function they define is
    # `__global__` (a `__device__` helper may be called by kernels outside the region, and a
    # `__host__` one, the default, by host code), neither launches a kernel, and neither
    # defines a macro (which could hide a launch). Then the only code that changed runs inside
    # those kernels, so compute-sanitizer may watch only them. None otherwise, or when neither
    # region defines a kernel.
    alone: frozenset[str] | None = None

    def of(self, which: str) -> frozenset[str]:
        """ "A" (the baseline) or "B" (the candidate)."""
        return self.original if which == "A" else self.candidate


def region_kernels(original: str, candidate: str) -> RegionKernels:
    """The kernels of both regions, each parsed once.

    >>> sorted(region_kernels("__global__ void k(float* p) {}", "__global__ void j() {}").alone)
    ['j', 'k']
    >>> region_kernels("void host() { k<<<1, 1>>>(); }", "void host() { k<<<1, 1>>>(); }").alone
    >>> region_kernels("__global__ void k() {}", "__device__ int f() { return 1; }").alone
    """
    (functions_a, launched_a), (functions_b, launched_b) = _read(original), _read(candidate)
    defined_a, defined_b = _kernels(functions_a), _kernels(functions_b)
    hidden = launched_a or launched_b or _MACRO.search(original) or _MACRO.search(candidate)
    kernels_only = all(f.spaces == {"__global__"} for f in (*functions_a, *functions_b))
    alone = ((defined_a | defined_b) or None) if kernels_only and not hidden else None
    return RegionKernels(defined_a | launched_a, defined_b | launched_b, not launched_a, alone)


def _read(code: str) -> tuple[list[Function], frozenset[str]]:
    """(the functions `code` defines, the kernels it launches by base name)."""
    return _functions(code), _launches(code)


def _kernels(functions: list[Function]) -> frozenset[str]:
    """The `__global__` ones of `functions`, by base name."""
    return frozenset(f.name.split("::")[-1] for f in functions if "__global__" in f.spaces)


def _functions(code: str) -> list[Function]:
    src = code.encode("utf-8", "replace")
    tokens = [t for t in tokenize(src) if t[0] not in (COMMENT, DIRECTIVE)]
    toks = merge_scopes(
        [Tok(kind, src[a:b].decode("utf-8", "replace"), 0) for kind, a, b in tokens]
    )
    return list(Outline(toks).functions)


def _launches(code: str) -> frozenset[str]:
    src = code.encode("utf-8", "replace")
    # Strings blanked so that "<<<" in a message is no launch.
    blanked = bytearray(src)
    for kind, a, b in tokenize(src):
        if kind in (COMMENT, STRING, DIRECTIVE):
            blanked[a:b] = b" " * (b - a)
    text = blanked.decode("utf-8", "replace")
    return frozenset(m.group(1).split("::")[-1] for m in _LAUNCH.finditer(text))
