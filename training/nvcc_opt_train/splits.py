"""Train and eval splits by a stable hash of (source, benchmark).

Every problem made from one benchmark (its kernels A and B and the pair A+B) lands in the same
split, so an eval problem never shares code with a train problem of its own benchmark. The hash
is sha256, not Python's salted `hash`, so a set remade later (or on another machine) splits the
same way; raising `eval_share` only moves benchmarks from train to eval, never back.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import replace

from nvcc_opt_train.problemset import Problem

MODES = ("auto", "train", "eval")
DEFAULT_EVAL_SHARE = 0.1


def position(source: str, benchmark: str) -> float:
    """Where (source, benchmark) falls in [0, 1): the first 8 bytes of a sha256, as a fraction.

    >>> 0.0 <= position("hecbench", "atomicCost") < 1.0
    True
    """
    digest = hashlib.sha256(f"{source}\x00{benchmark}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def split_of(source: str, benchmark: str, eval_share: float) -> str:
    """ "eval" for the benchmarks whose position is below `eval_share`, else "train"."""
    return "eval" if position(source, benchmark) < eval_share else "train"


def assign(problems: Iterable[Problem], mode: str, eval_share: float) -> list[Problem]:
    """The problems with their split: by hash (`auto`), or all in the one split `mode` names."""
    if mode not in MODES:
        raise ValueError(f"unknown split mode {mode!r}; use one of {', '.join(MODES)}")
    if not 0.0 <= eval_share <= 1.0:
        raise ValueError(f"eval share {eval_share} is not between 0 and 1")
    return [
        replace(
            p,
            split=mode if mode != "auto" else split_of(p.source, p.benchmark, eval_share),
        )
        for p in problems
    ]
