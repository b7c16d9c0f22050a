"""Before the compiler runs: what a compile of a tagged source will do, decided in full.

The command is parsed and the source scanned; accepted rewrites are looked up (the database is
opened only when the accepted-files index names this file) and, in candidate mode, the candidate
replaces its region's rewrite; then the plan says which rewrite applies to each region. A command
that is not a compile of a tagged file gives None: the original runs as it is.
"""

from __future__ import annotations

import os

from nvcc_opt import paths
from nvcc_opt.launcher import argv, candidate, chain, plan
from nvcc_opt.launcher.notices import notice, say, shown, storable
from nvcc_opt.regions.scan import scan
from nvcc_opt.values import AcceptedRewrite, RegionSpan


class Tagged:
    """A compile of a tagged source, with everything decided before the compiler runs."""

    __slots__ = ("chain", "job", "file", "source", "regions", "plan", "store", "candidate")

    def __init__(
        self,
        found: chain.Chain,
        job: argv.CompileJob,
        file: str,
        source: bytes,
        regions: tuple[RegionSpan, ...],
        decided: plan.Plan,
        store: str,
        is_candidate: bool,
    ) -> None:
        self.chain = found
        self.job = job
        self.file = file  # real absolute path of the source
        self.source = source
        self.regions = regions
        self.plan = decided
        self.store = store
        self.candidate = is_candidate  # a private tree's candidate: fail closed, record nothing


def _read_text(path: str) -> str:
    with open(path, encoding="utf-8", errors="surrogateescape") as handle:
        return handle.read()


def _parent_comm() -> str:
    try:
        with open(f"/proc/{os.getppid()}/comm", encoding="utf-8") as handle:
            return handle.read().strip()
    except OSError:
        return ""


def prepare(rest: list[str]) -> Tagged | None:
    found = chain.split_chain(rest)
    if found is None or not chain.is_nvcc(found.compiler):
        return None
    job = argv.parse(found.args, _read_text, os.getcwd())
    if isinstance(job, argv.PassThrough):
        return None
    file = os.path.realpath(job.source)
    with open(file, "rb") as handle:
        source = handle.read()
    result = scan(source)
    for warning in result.warnings:
        say(f"{job.source}:{warning.line}: warning: nvcc-opt: {warning.message}\n")
    if not result.regions:
        return None
    store = paths.store_file(near=os.path.dirname(file))
    fix = chain.ccache_first_fix(_parent_comm())
    if fix and paths.say_once(store, fix):
        notice(fix)
    accepted = _accepted(store, file, result.regions) if _in_store(store, file) else []
    proposal = candidate.load()
    mine = proposal is not None and proposal.file == file
    if proposal is not None and mine:
        if proposal.region_hash not in {r.text_hash for r in result.regions}:
            raise candidate.CandidateError(f"no region with hash {proposal.region_hash} in {file}")
        accepted = [a for a in accepted if a.region_hash != proposal.region_hash]
        accepted.append(proposal.as_rewrite())
    decided = plan.plan(result.regions, accepted, job.targets)
    for outcome in decided.outcomes:
        dropped = outcome.rewrite is None and outcome.region.text_hash == getattr(
            proposal, "region_hash", None
        )
        if mine and dropped:
            raise candidate.CandidateError(outcome.why)
        if outcome.warn:
            say(f"{job.source}:{outcome.region.pragma_line}: warning: nvcc-opt: {outcome.why}\n")
    return Tagged(found, job, file, source, result.regions, decided, store, mine)


def _in_store(store: str, file: str) -> bool:
    """Whether the store can hold `file` (SQLite text is UTF-8); says once why not."""
    if storable(file):
        return True
    message = (
        f"{shown(file)}: a path that is not UTF-8 cannot be kept in the store; its regions"
        " compile as they are and are not recorded"
    )
    if paths.say_once(store, message):
        notice(message)
    return False


def _accepted(store: str, file: str, regions: tuple[RegionSpan, ...]) -> list[AcceptedRewrite]:
    from nvcc_opt.store import accepted

    found = accepted.lookup(store, file, [r.text_hash for r in regions])
    if found.problem:
        from nvcc_opt.launcher import once

        message = f"accepted rewrites not applied ({found.problem}); compiling the original"
        if once.first_time(message):
            notice(message)
    if found.cause == accepted.LOCKED:
        import atexit  # the object will be the original's: the next build compiles it again

        atexit.register(_touch_stamps, store, file, regions)
    return list(found.rewrites)


def _touch_stamps(store: str, file: str, regions: tuple[RegionSpan, ...]) -> None:
    for region in regions:
        try:
            paths.touch_stamp(paths.stamp_file(store, file, region.name))
        except OSError:
            return
