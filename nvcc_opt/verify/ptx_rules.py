"""What a rewrite may add to the PTX of a translation unit. Pure: facts in.

The facts (device state and the functions that write it, external device functions, special
registers, cache policies and sleeps, each by function and through its callees) are
`ptx_facts`'. `ptx_reasons` refuses what the candidate adds: for a function the original also
has, anything not allowed that this function did not already have; for a new function, anything
not allowed unless a function the rewrite removed (one it replaced: a fused kernel) had it.
Reasons start `ptx: ` and name the function.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping

from nvcc_opt.verify.object_names import shown
from nvcc_opt.verify.ptx_facts import PtxFacts

Demangle = Callable[[Collection[str]], Mapping[str, str]]

ALLOWED_SPECIAL = frozenset(
    [
        "%tid",
        "%ntid",
        "%laneid",
        "%warpid",
        "%nwarpid",
        "%ctaid",
        "%nctaid",
        "%smid",
        "%nsmid",
        "%gridid",
        "%lanemask_eq",
        "%lanemask_le",
        "%lanemask_lt",
        "%lanemask_ge",
        "%lanemask_gt",
        "%dynamic_smem_size",
        "%total_smem_size",
        "%aggr_smem_size",
        "%clusterid",
        "%nclusterid",
        "%cluster_ctaid",
        "%cluster_nctaid",
        "%cluster_ctarank",
        "%cluster_nctarank",
        "%is_explicit_cluster",
    ]
)


Finding = tuple[str, list[str]]  # a reason with {0}, {1}... where names go, and the names


def ptx_reasons(
    original: PtxFacts, candidate: PtxFacts, demangle: Demangle | None = None
) -> list[str]:
    """What the candidate's PTX adds that a rewrite may not (see the module docstring)."""
    found = _variable_findings(original, candidate)
    for feature_of, allowed, text in _FEATURE_RULES:
        now, before = feature_of(candidate), feature_of(original)
        for feature, users in sorted(now.items()):
            offenders = _offenders(users, before.get(feature, frozenset()), original, candidate)
            if offenders and feature not in allowed:
                raw = [candidate.functions.get(f, f) for f in offenders]
                found.append((f"ptx: {_list(len(raw), 1)} {text}", [feature, *raw]))
    names = {n for _, ns in found for n in ns}
    readable = dict(demangle(names)) if demangle and names else {}
    return [text.format(*(shown(n, readable) for n in ns)) for text, ns in found]


_FEATURE_RULES: tuple[
    tuple[Callable[[PtxFacts], Mapping[str, frozenset[str]]], frozenset[str], str], ...
] = (
    (
        lambda facts: facts.externs,
        frozenset(),
        "calls external device function {0}, which the original does not (device printf, "
        "malloc, assert, launches from the device and other files' functions are not allowed)",
    ),
    (
        lambda facts: facts.special,
        ALLOWED_SPECIAL,
        "reads special register {0}, which the original does not (timers, environment and "
        "performance-monitor registers are not allowed)",
    ),
    (
        lambda facts: facts.policies,
        frozenset(),
        "uses {0}, which the original does not: an L2 cache policy or a sleep outlives the "
        "work it belongs to and changes the timing of what follows",
    ),
)


def _variable_findings(original: PtxFacts, candidate: PtxFacts) -> list[Finding]:
    found: list[Finding] = []
    for key, variable in sorted(candidate.variables.items()):
        before = original.variables.get(key)
        writers = [candidate.functions.get(w, w) for w in sorted(variable.writers)]
        listed = _list(len(writers), 1)
        if variable.space != "global" or (before is not None and not before.read_only):
            continue
        if before is None and variable.managed:
            text = "ptx: declares managed variable {0}, which the original does not: state "
            text += "shared by the host and every launch"
        elif before is None and variable.extern:
            text = "ptx: uses device variable {0} of another file, which the original does not: "
            text += "the program's state outside the region"
        elif before is None and writers:
            text = "ptx: declares device variable {0}, which the original does not, and "
            text += f"{listed} writes it (or lets its address escape): state kept across launches"
        elif before is not None and writers:
            text = f"ptx: {listed} now writes device variable {{0}}, which the original only "
            text += "read: state kept across launches"
        else:
            continue
        found.append((text, [variable.name, *writers]))
    return found


def _offenders(
    users: frozenset[str], before: frozenset[str], original: PtxFacts, candidate: PtxFacts
) -> list[str]:
    """Candidate functions that add a feature: a function the original has that did not use it,
    or a new function, unless a function the rewrite removed (one it replaced) used it."""
    removed = original.functions.keys() - candidate.functions.keys()
    return sorted(
        f for f in users if (f not in before if f in original.functions else not before & removed)
    )


def _list(count: int, first: int) -> str:
    """Placeholders {first}, {first+1}, ... joined as a list of names."""
    return ", ".join(f"{{{i}}}" for i in range(first, first + count))
