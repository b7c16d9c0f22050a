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

    def of(self, which: str) -> frozenset[str]:
        """ "A" (the baseline) or "B" (the candidate)."""
        return self.original if which == "A" else self.candidate


def region_kernels(original: str, candidate: str) -> RegionKernels:
    defined_a, launched_a = _kernels(original)
    defined_b, launched_b = _kernels(candidate)
    return RegionKernels(defined_a | launched_a, defined_b | launched_b, not launched_a)


def device_only(original: str, candidate: str) -> frozenset[str] | None:
    """The kernels of both regions when both are kernels alone: every function they define is
    `__global__` (a `__device__` helper may be called by kernels outside the region, and a
    `__host__` one, the default, by host code), neither launches a kernel, and neither defines
    a macro (which could hide a launch). Then the only code that changed runs inside those
    kernels, so a check of the candidate (compute-sanitizer) may watch only them. None
    otherwise, or when neither region defines a kernel.

    >>> sorted(device_only("__global__ void k(float* p) {}", "__global__ void j(float* p) {}"))
    ['j', 'k']
    >>> device_only("void host() { k<<<1, 1>>>(); }", "void host() { k<<<1, 1>>>(); }") is None
    True
    >>> device_only("__global__ void k() {}", "__device__ int f() { return 1; }") is None
    True
    """
    kernels: set[str] = set()
    for code in (original, candidate):
        functions = _functions(code)
        if _launches(code) or _MACRO.search(code):
            return None
        if any(f.spaces != {"__global__"} for f in functions):
            return None
        kernels |= {f.name.split("::")[-1] for f in functions}
    return frozenset(kernels) or None


def _functions(code: str) -> list[Function]:
    src = code.encode("utf-8", "replace")
    tokens = [t for t in tokenize(src) if t[0] not in (COMMENT, DIRECTIVE)]
    toks = merge_scopes(
        [Tok(kind, src[a:b].decode("utf-8", "replace"), 0) for kind, a, b in tokens]
    )
    return list(Outline(toks).functions)


def _kernels(code: str) -> tuple[frozenset[str], frozenset[str]]:
    """(kernels defined, kernels launched) in `code`, by base name."""
    functions = _functions(code)
    defined = frozenset(f.name.split("::")[-1] for f in functions if "__global__" in f.spaces)
    return defined, _launches(code)


def _launches(code: str) -> frozenset[str]:
    src = code.encode("utf-8", "replace")
    # Strings blanked so that "<<<" in a message is no launch.
    blanked = bytearray(src)
    for kind, a, b in tokenize(src):
        if kind in (COMMENT, STRING, DIRECTIVE):
            blanked[a:b] = b" " * (b - a)
    text = blanked.decode("utf-8", "replace")
    return frozenset(m.group(1).split("::")[-1] for m in _LAUNCH.finditer(text))
