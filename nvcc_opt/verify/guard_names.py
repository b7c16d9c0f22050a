"""The static guards that read names and inline asm: streams, host threads, graphs, L2 policies,
memory copies, libraries, timers and sleeps, and constructor/destructor attributes, by the
names in `_NAME_RULES`; clock registers and L2 eviction priorities in inline asm by
`_ASM_RULES`. Pure: tokens in, findings out.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import lru_cache

from nvcc_opt.regions.lexer import STRING, WORD
from nvcc_opt.verify.declarations import Tok
from nvcc_opt.verify.guard_code import Finding, group

# (guard, how the name matches, pattern, what it does). How: "word" is the name's last component,
# "prefix" and "iprefix" (any case) its start, "has" a substring in any case, "qualified" the last
# component after some `x::`, "scope" any component before the last.
_NAME_RULES: tuple[tuple[str, str, str, str], ...] = (
    ("stream", "prefix", "cudaStreamCreate", "creates a CUDA stream"),
    ("stream", "prefix", "cuStreamCreate", "creates a CUDA stream"),
    ("stream", "prefix", "cudaStreamBeginCapture", "captures a stream"),
    ("stream", "prefix", "cuStreamBeginCapture", "captures a stream"),
    ("stream", "word", "cudaStream_t", "declares a CUDA stream"),
    ("stream", "word", "CUstream", "declares a CUDA stream"),
    ("stream", "word", "cudaStreamPerThread", "launches on the per-thread stream"),
    ("thread", "qualified", "thread", "starts a host thread"),
    ("thread", "qualified", "jthread", "starts a host thread"),
    ("thread", "qualified", "async", "runs host work asynchronously"),
    ("thread", "prefix", "pthread_", "starts a host thread"),
    ("thread", "prefix", "omp_", "uses OpenMP"),
    ("thread", "word", "cudaLaunchHostFunc", "runs host code from a stream"),
    ("thread", "word", "cudaStreamAddCallback", "runs host code from a stream"),
    ("graph", "prefix", "cudaGraph", "uses a CUDA graph"),
    ("graph", "prefix", "cuGraph", "uses a CUDA graph"),
    ("graph", "prefix", "cudaStreamEndCapture", "uses a CUDA graph"),
    ("l2", "has", "accesspolicywindow", "sets an L2 access policy window"),
    ("l2", "word", "cudaStreamAttrValue", "sets a stream attribute"),
    ("l2", "word", "cudaKernelNodeAttrValue", "sets a kernel node attribute"),
    ("l2", "has", "persistingl2", "sets aside persisting L2 cache"),
    ("l2", "has", "persisting_l2", "sets aside persisting L2 cache"),
    ("l2", "has", "accessproperty", "sets an L2 access property"),
    ("l2", "has", "access_property", "sets an L2 access property"),
    ("l2", "word", "annotated_ptr", "sets an L2 access property"),
    ("precomputed", "prefix", "cudaMemcpy", "copies memory"),
    ("precomputed", "prefix", "cudaMemset", "fills memory"),
    ("precomputed", "prefix", "cuMemcpy", "copies memory"),
    ("precomputed", "prefix", "cuMemset", "fills memory"),
    *(
        ("library", "iprefix", name, "calls a library")
        for name in ("cublas", "cusparse", "cufft", "curand", "cusolver", "cudnn", "cutensor")
    ),
    *(
        ("library", "scope", name, "calls a library")
        for name in ("thrust", "cub", "cutlass", "cute")
    ),
    ("timer", "word", "clock", "reads a timer"),
    ("timer", "word", "clock64", "reads a timer"),
    ("timer", "word", "globaltimer", "reads a timer"),
    ("timer", "word", "__globaltimer", "reads a timer"),
    ("timer", "word", "clock_gettime", "reads a timer"),
    ("timer", "word", "gettimeofday", "reads a timer"),
    ("timer", "scope", "chrono", "reads a timer"),
    ("timer", "word", "__nanosleep", "sleeps"),
    ("timer", "scope", "this_thread", "sleeps"),
    ("timer", "prefix", "cudaEvent", "uses CUDA events"),
    ("timer", "prefix", "cuEvent", "uses CUDA events"),
    ("outside", "word", "constructor", "runs code at program start or exit"),
    ("outside", "word", "destructor", "runs code at program start or exit"),
)
# Block- and warp-wide CUB primitives are building blocks inside the candidate's own kernel.
_OWN_WORK = ("cub::Block", "cub::Warp")
# Inline-asm text (lowercase) that reads a clock or pins lines in L2 across launches.
_ASM_RULES = (
    ("timer", "%clock", "reads a clock register in inline asm"),
    ("timer", "%globaltimer", "reads a clock register in inline asm"),
    ("l2", "evict_last", "sets an L2 eviction priority in inline asm"),
    ("l2", "createpolicy", "sets an L2 eviction priority in inline asm"),
)
_ASM = frozenset(("asm", "__asm__", "__asm"))


def name_findings(toks: Iterable[Tok]) -> list[Finding]:
    return [
        Finding(guard, tok.text, f"{what} ({tok.text})", tok.line)
        for tok in toks
        if tok.kind == WORD
        for guard, what in _rules_for(tok.text)
    ]


@lru_cache(maxsize=4096)
def _rules_for(name: str) -> tuple[tuple[str, str], ...]:
    """(guard, what) of each name rule `name` matches."""
    if name[0].isdigit() or name[0] == "." or name.startswith(_OWN_WORK):
        return ()
    return tuple(
        (guard, what)
        for guard, how, pattern, what in _NAME_RULES
        if _name_matches(name, how, pattern)
    )


def _name_matches(name: str, how: str, pattern: str) -> bool:
    *scopes, last = name.split("::")
    if how == "word":
        return last == pattern
    if how == "prefix":
        return last.startswith(pattern)
    if how == "iprefix":
        return last.lower().startswith(pattern)
    if how == "has":
        return pattern in last.lower()
    if how == "qualified":
        return bool(scopes) and last == pattern
    return pattern in scopes


def asm_findings(toks: list[Tok]) -> list[Finding]:
    found = []
    for i, tok in enumerate(toks):
        if tok.kind != WORD or tok.text not in _ASM:
            continue
        text = " ".join(t.text for t in group(toks, i + 1, "(", ")") if t.kind == STRING).lower()
        for guard, needle, what in _ASM_RULES:
            if needle in text:
                found.append(Finding(guard, f"asm {needle}", f"{what} ({needle})", tok.line))
    return found
