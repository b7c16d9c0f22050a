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
from nvcc_opt.verify.declarations import Outline, Tok, merge_scopes

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


def _kernels(code: str) -> tuple[frozenset[str], frozenset[str]]:
    """(kernels defined, kernels launched) in `code`, by base name."""
    src = code.encode("utf-8", "replace")
    tokens = [t for t in tokenize(src) if t[0] not in (COMMENT, DIRECTIVE)]
    toks = merge_scopes(
        [Tok(kind, src[a:b].decode("utf-8", "replace"), 0) for kind, a, b in tokens]
    )
    defined = frozenset(
        f.name.split("::")[-1] for f in Outline(toks).functions if "__global__" in f.spaces
    )
    # Strings blanked so that "<<<" in a message is no launch.
    blanked = bytearray(src)
    for kind, a, b in tokenize(src):
        if kind in (COMMENT, STRING, DIRECTIVE):
            blanked[a:b] = b" " * (b - a)
    text = blanked.decode("utf-8", "replace")
    launched = frozenset(m.group(1).split("::")[-1] for m in _LAUNCH.finditer(text))
    return defined, launched
