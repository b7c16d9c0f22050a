"""Which changes to try first, from what was measured about the kernel, not from its name.

profile_kernel says what bounds the kernel (DRAM or SM near peak, or neither: latency) and why
its warps stall; compiler_analysis says how many registers it uses, whether they limit
occupancy and whether it spills. Each fact raises the changes that relieve what it shows; a
change no fact speaks for keeps the default order (structural changes first, then flags).
Without a profile, the code itself speaks: transcendental math makes fast math worth a timing
early; a kernel without loops is element-wise and bound by its loads. Every change carries the
fact that put it where it is (`Change.why`), for the explanation.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from nvcc_opt.search.changes import Change
from nvcc_opt.search.observe import Analysis, Profile

# What each change relieves (a flag's or transform's name -> kinds); maxrregcount* by prefix.
FEWER_BYTES = {
    "fuse", "vector_loads", "vector_loads_strided", "const_restrict", "restrict", "ldg", "hoist",
    "preload_run", "stage_table", "warp_rows", "warp_rows_grid", "tile_matmul", "block_warp_wide",
}  # fmt: skip
LOAD_LATENCY = {
    "vector_loads", "vector_loads_strided", "preload_run", "stage_table", "ldg", "const_restrict",
    "hoist", "unroll_runtime", "warp_rows", "warp_rows_grid", "fuse_loops",
}  # fmt: skip
FEWER_LOAD_INSTRUCTIONS = {
    "vector_loads", "vector_loads_strided", "preload_run", "stage_table", "fuse",
}  # fmt: skip
FEWER_INSTRUCTIONS = {
    "fast_math", "split_division", "unroll", "sm_90a", "ptxas_O3", "vectorize", "tile_matmul",
    "fuse_loops", "drop_undo",
}  # fmt: skip
FEWER_BARRIERS = {"warp_shuffle_tail", "warp_shuffle_scan"}
FEWER_BANK_CONFLICTS = {"pad_shared"}
FEWER_ATOMICS = {"warp_aggregate", "shared_atomics"}
MORE_WARPS = {
    "launch_bounds", "block_half", "block_quarter", "block_double", "maxrregcount",
    "min_blocks_double",
}  # fmt: skip
ELEMENT_WISE = {"fuse", "vector_loads", "const_restrict", "ldg", "restrict"}
TRANSCENDENTAL = re.compile(
    r"\b(exp|exp2|expm1|log|log2|log10|log1p|sin|cos|tan|sinh|cosh|tanh|asin|acos|atan|atan2"
    r"|pow|erf|erfc|sqrt|rsqrt|cbrt|hypot|sincos)f?\s*\("
)
LOOP = re.compile(r"\b(for|while)\s*\(")
ATOMIC_ADD = re.compile(r"\batomicAdd\s*\(")
LOW_OCCUPANCY_PCT = 50.0
STALL_SHARE = 0.2  # a stall reason this large is worth acting on


@dataclass(frozen=True)
class Rule:
    score: int
    names: frozenset[str]
    why: str


def ordered(
    changes: list[Change], code: str, analysis: Analysis | None, profile: Profile | None
) -> list[Change]:
    """`changes` best first, each with the fact that ranked it (empty: the default order)."""
    rules = _profile_rules(profile) + _analysis_rules(analysis) + _static_rules(code, profile)
    if ATOMIC_ADD.search(code):  # contention on an atomic's address shows in no other fact
        rules.append(Rule(1, frozenset(FEWER_ATOMICS), "the code adds with atomicAdd: fewer "
                          "atomics on a contended address"))  # fmt: skip
    ranked = []
    for at, change in enumerate(changes):
        family = "maxrregcount" if change.name.startswith("maxrregcount") else change.name
        spoke = [r for r in rules if family in r.names]
        score = sum(r.score for r in spoke)
        best = max(spoke, key=lambda r: r.score).why if spoke and score > 0 else ""
        ranked.append((-score, at, replace(change, why=best)))
    return [change for _, _, change in sorted(ranked, key=lambda t: (t[0], t[1]))]


def _profile_rules(profile: Profile | None) -> list[Rule]:
    if profile is None:
        return []
    rules = []
    where = f"profile_kernel ({profile.kernel})"
    if profile.bound == "memory":
        rules.append(Rule(3, frozenset(FEWER_BYTES), f"{where}: memory-bound, DRAM "
                          f"{profile.dram_pct or 0:.0f}% of peak: fewer bytes moved"))  # fmt: skip
    elif profile.bound == "compute":
        rules.append(Rule(3, frozenset(FEWER_INSTRUCTIONS), f"{where}: compute-bound, SM "
                          f"{profile.sm_pct or 0:.0f}% of peak: fewer instructions"))  # fmt: skip
    elif profile.bound == "latency":
        rules.append(Rule(1, frozenset(LOAD_LATENCY | MORE_WARPS), f"{where}: latency-bound "
                          "(neither DRAM nor SM near peak): more work in flight"))  # fmt: skip
    for reason, share in profile.stalls:
        if share < STALL_SHARE:
            continue
        said = f"{where}: {reason} stalls {share:.0%} of a warp's cycles"
        if reason == "long_scoreboard":
            rules.append(Rule(2, frozenset(LOAD_LATENCY), f"{said} (waiting on global loads)"))
        elif reason in ("lg_throttle", "mio_throttle", "tex_throttle"):
            rules.append(Rule(2, frozenset(FEWER_LOAD_INSTRUCTIONS), f"{said} (too many loads)"))
        if reason in ("mio_throttle", "short_scoreboard"):
            rules.append(Rule(2, frozenset(FEWER_BANK_CONFLICTS), f"{said} (shared memory: "
                              "bank conflicts replay its accesses)"))  # fmt: skip
        elif reason == "barrier":
            rules.append(Rule(3, frozenset(FEWER_BARRIERS), f"{said} (__syncthreads)"))
        elif reason in ("math_pipe_throttle", "wait", "short_scoreboard"):
            rules.append(Rule(2, frozenset(FEWER_INSTRUCTIONS), f"{said} (arithmetic)"))
    achieved = profile.achieved_pct
    if achieved is not None and achieved < LOW_OCCUPANCY_PCT and profile.bound != "compute":
        limit = f", {profile.limiter} set the limit" if profile.limiter else ""
        rules.append(Rule(2, frozenset(MORE_WARPS), f"{where}: achieved occupancy "
                          f"{achieved:.0f}%{limit}: more warps to hide latency"))  # fmt: skip
    return rules


def _analysis_rules(analysis: Analysis | None) -> list[Rule]:
    if analysis is None or analysis.registers is None:
        return []
    rules = []
    if analysis.register_limited and not analysis.spill_bytes:
        occupancy = f" ({analysis.occupancy_pct}% occupancy)" if analysis.occupancy_pct else ""
        rules.append(
            Rule(2, frozenset({"maxrregcount", "launch_bounds", "min_blocks_double"}),
                 f"compiler_analysis: {analysis.registers} registers limit occupancy{occupancy}")
        )  # fmt: skip
    if analysis.spill_bytes:
        rules.append(Rule(-3, frozenset({"maxrregcount", "min_blocks_double"}), "spills already"))
        rules.append(
            Rule(3, frozenset({"min_blocks_half"}), f"compiler_analysis: {analysis.spill_bytes} B "
                 f"spilled at {analysis.registers} registers: a higher register cap")
        )  # fmt: skip
    else:
        rules.append(Rule(-1, frozenset({"min_blocks_half"}), "no spills to remove"))
    return rules


def _static_rules(code: str, profile: Profile | None) -> list[Rule]:
    """What the code itself says, where no profile speaks."""
    if profile is not None and profile.bound is not None:
        return []
    rules = []
    math = sorted({m.group(1) for m in TRANSCENDENTAL.finditer(code)})
    if math:
        rules.append(Rule(2, frozenset({"fast_math"}), "no profile; the code calls "
                          f"{', '.join(math)}: fast math is timed early"))  # fmt: skip
    if not LOOP.search(code):
        rules.append(Rule(1, frozenset(ELEMENT_WISE), "no profile; element-wise (no loop): "
                          "bound by its loads"))  # fmt: skip
    return rules
