"""Deciding what one tagged compile does: which accepted rewrites apply, with which extra flags.

Pure: the inputs are the scan, the accepted rewrites the store returned and the compile's targets.
Every region gets an outcome that `nvcc-opt explain` can also show. A rewrite whose compile_args
`nvcc_opt.flags` refuses for this compile is not applied, and the build says why.
"""

from __future__ import annotations

from nvcc_opt.values import AcceptedRewrite, RegionSpan, Value

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence


class Outcome(Value):
    __slots__ = ("region", "rewrite", "why", "warn")
    region: RegionSpan
    rewrite: AcceptedRewrite | None  # the rewrite to splice, or None
    why: str  # one line: why this region does or does not get a rewrite
    warn: bool  # the build should say `why` (a conflict or refused flags the user must resolve)

    def __init__(
        self, region: RegionSpan, rewrite: AcceptedRewrite | None, why: str, warn: bool = False
    ) -> None:
        self._set(region=region, rewrite=rewrite, why=why, warn=warn)


class Plan(Value):
    __slots__ = ("outcomes", "extra_args")
    outcomes: tuple[Outcome, ...]
    extra_args: tuple[str, ...]

    def __init__(self, outcomes: tuple[Outcome, ...], extra_args: tuple[str, ...]) -> None:
        self._set(outcomes=outcomes, extra_args=extra_args)

    @property
    def applied(self) -> list[tuple[RegionSpan, AcceptedRewrite]]:
        return [(o.region, o.rewrite) for o in self.outcomes if o.rewrite is not None]


def targets_match(rewrite: AcceptedRewrite, targets: Sequence[str]) -> bool:
    """A rewrite verified for some GPU targets applies only to a compile for exactly those."""
    return rewrite.targets is None or set(rewrite.targets) == set(targets)


def flag_key(arg: str) -> str:
    """The option a flag sets: `-maxrregcount=32` and `-maxrregcount=64` share a key."""
    return arg.split("=", 1)[0] if arg.startswith("-") else arg


def conflicts(first: Sequence[str], second: Sequence[str]) -> list[str]:
    """Options both sets give with different values (repeatable options never conflict)."""
    repeatable = {"-gencode", "--generate-code", "-Xptxas", "-Xcompiler", "-D", "-I"}
    mine = {flag_key(a): a for a in first if flag_key(a) not in repeatable}
    found = []
    for arg in second:
        key = flag_key(arg)
        if key in mine and mine[key] != arg:
            found.append(f"{mine[key]} vs {arg}")
    return found


def plan(
    regions: Sequence[RegionSpan], accepted: Sequence[AcceptedRewrite], targets: Sequence[str]
) -> Plan:
    by_hash = {r.region_hash: r for r in accepted}
    outcomes: list[Outcome] = []
    for region in regions:
        rewrite = by_hash.get(region.text_hash)
        if rewrite is None:
            outcomes.append(Outcome(region, None, "no accepted rewrite for this region text"))
        elif rewrite.suspect:
            why = f"accepted rewrite #{rewrite.id} is suspect: {rewrite.suspect}"
            outcomes.append(Outcome(region, None, why))
        elif not targets_match(rewrite, targets):
            wanted = ",".join(rewrite.targets or ())
            why = f"rewrite #{rewrite.id} was verified for {wanted}, this compile targets " + (
                ",".join(targets) or "nvcc's default"
            )
            outcomes.append(Outcome(region, None, why))
        elif refusals := _refused_flags(rewrite, targets):
            # a store edited by hand (or an old one) must never put a command on nvcc's line
            why = f"rewrite #{rewrite.id} not applied: " + "; ".join(refusals)
            outcomes.append(Outcome(region, None, why, warn=True))
        else:
            outcomes.append(Outcome(region, rewrite, f"rewrite #{rewrite.id} applied"))
    return _drop_conflicts(outcomes)


def _refused_flags(rewrite: AcceptedRewrite, targets: Sequence[str]) -> list[str]:
    from nvcc_opt import flags  # here: most tagged compiles have no accepted rewrite to check

    return flags.refused(rewrite.compile_args, targets)


def _drop_conflicts(outcomes: list[Outcome]) -> Plan:
    chosen = [o for o in outcomes if o.rewrite is not None]
    clashing: dict[int, str] = {}
    for i, first in enumerate(chosen):
        for second in chosen[i + 1 :]:
            assert first.rewrite is not None and second.rewrite is not None
            found = conflicts(first.rewrite.compile_args, second.rewrite.compile_args)
            if found:
                text = "; ".join(found)
                clashing[first.rewrite.id] = f"flags conflict with #{second.rewrite.id}: {text}"
                clashing[second.rewrite.id] = f"flags conflict with #{first.rewrite.id}: {text}"
    final: list[Outcome] = []
    extra: list[str] = []
    seen: set[tuple[str, ...]] = set()
    for outcome in outcomes:
        if outcome.rewrite is not None and outcome.rewrite.id in clashing:
            why = f"rewrite #{outcome.rewrite.id} not applied: {clashing[outcome.rewrite.id]}"
            final.append(Outcome(outcome.region, None, why, warn=True))
            continue
        final.append(outcome)
        if outcome.rewrite is not None and outcome.rewrite.compile_args not in seen:
            seen.add(outcome.rewrite.compile_args)
            extra.extend(outcome.rewrite.compile_args)
    return Plan(tuple(final), tuple(extra))
