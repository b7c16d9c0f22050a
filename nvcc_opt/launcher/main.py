"""The launcher's slow path: a compile whose source holds `@optimize`.

Fails open: any problem in here runs the original command unchanged and says why, briefly; so
does a substituted compile that exits 0 without writing its object (it counts as failed). Exit
code, stdout and stderr of the compiler pass through; with no accepted rewrite the compiler runs on
the original arguments, so the object is the one plain nvcc makes.

Start-up counts on every tagged compile: only the standard library's cheapest modules load here;
the database is opened only when the accepted-files index names this file or a compile has not
been recorded yet (`seen/` markers).
"""

from __future__ import annotations

import os
import stat
import sys

from nvcc_opt import paths
from nvcc_opt._sha import sha256
from nvcc_opt.commands import GUARD
from nvcc_opt.launcher import argv, candidate, chain, depfile, plan, spawn
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.values import AcceptedRewrite, CompileContext, RegionSpan

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

NVCC_ENV = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
PROBE_TIMEOUT_S = 30.0


def notice(message: str) -> None:
    say(f"nvcc-opt: {message}\n")


def say(text: str) -> None:
    """Write to stderr; a path's bytes that are not UTF-8 come out as they are, as nvcc's do."""
    buffer = getattr(sys.stderr, "buffer", None)
    if buffer is None:  # a text-only stream (embedded): its own error handler decides
        sys.stderr.write(text)
        sys.stderr.flush()
        return
    try:
        data = text.encode("utf-8", "surrogateescape")
    except UnicodeEncodeError:
        data = text.encode("utf-8", "backslashreplace")
    sys.stderr.flush()
    buffer.write(data)
    buffer.flush()


def shown(path: str) -> str:
    """A path as printable text (bytes that are not UTF-8 as \\xNN), for messages kept as text."""
    return path.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def storable(path: str) -> bool:
    """Whether the store (SQLite text) can hold `path`: not when it is not UTF-8."""
    try:
        path.encode()
    except UnicodeEncodeError:
        return False
    return True


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


def run(rest: list[str]) -> int:
    try:
        tagged = prepare(rest)
    except candidate.CandidateError as exc:
        notice(f"bad candidate: {exc}")
        return 1
    except Exception as exc:  # fail open: never fail a build plain nvcc would pass
        notice(f"internal error ({type(exc).__name__}: {exc}); compiling the original")
        tagged = None
    if tagged is None:
        return _call(rest)
    return execute(tagged)


def _env() -> dict[str, str]:
    return {**os.environ, GUARD: "1"}


def _call(command: list[str]) -> int:
    try:
        return spawn.call(command, _env())
    except OSError as exc:
        notice(f"cannot run {command[0]}: {exc.strerror}")
        return 127


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


def execute(tagged: Tagged) -> int:
    version = _start_version_probe(tagged.chain.compiler)
    original = tagged.chain.command(list(tagged.job.args))
    try:
        stamps = _stamps(tagged)
    except Exception as exc:  # fail open (candidate mode: fail closed)
        _internal_error(tagged, exc)
        return 1 if tagged.candidate else _call(original)
    copy: str | None = None
    if tagged.plan.applied:
        copy, code, errors = _try_substituted(tagged)
        if code != 0 and tagged.candidate:
            sys.stderr.write(errors)
            return code
        if code != 0:
            copy = None
            code = _call(original)
            if code == 0 and errors:
                _after_compile(_suspect, tagged, errors)
    else:
        code = _call(original)
    if tagged.candidate:
        stamps.append(os.environ[candidate.ENV])  # a new candidate rebuilds this object
    if code == 0:
        _after_compile(_fix_depfile, tagged, copy, stamps)
    if not (tagged.candidate or os.environ.get(candidate.PRIVATE)) and storable(tagged.file):
        _after_compile(lambda: _record(tagged, _finish_version_probe(version)))
    return code


def _after_compile(step: Callable[..., None], *args: object) -> None:
    """Run one step after the compile; an error is reported, never fails the built object."""
    try:
        step(*args)
    except Exception as exc:
        notice(f"internal error after compiling ({type(exc).__name__}: {exc})")


def _stamps(tagged: Tagged) -> list[str]:
    """The regions' stamp files, created if missing; [] (and why) when they cannot be."""
    try:
        stamps = [paths.stamp_file(tagged.store, tagged.file, r.name) for r in tagged.regions]
        for stamp in stamps:
            paths.ensure_stamp(stamp)
    except OSError as exc:
        notice(f"cannot create region stamps ({exc}); decisions will not trigger rebuilds")
        return []
    return stamps


def _try_substituted(tagged: Tagged) -> tuple[str | None, int, str]:
    """`_compile_substituted`, with an internal error reported as a failed substitution that
    is nobody's rewrite's fault (errors "": the rewrite is not marked suspect)."""
    try:
        return _compile_substituted(tagged)
    except Exception as exc:  # fail open (candidate mode: fail closed)
        _internal_error(tagged, exc)
        return None, 1, ""


def _internal_error(tagged: Tagged, exc: Exception) -> None:
    then = "failing the candidate" if tagged.candidate else "compiling the original"
    notice(f"internal error ({type(exc).__name__}: {exc}); {then}")


def quote_include(source: str) -> str:
    """Quoted includes of the copy resolve as for the original: `-iquote` the source's folder,
    as spelled (so `__FILE__` in headers is unchanged), quoted (nvcc splits values at commas and
    runs gcc through sh). `-I` would also change where `<...>` includes look."""
    folder = os.path.dirname(source) or "."
    if any(c in folder for c in '"$`\\\n'):
        raise ValueError(f"cannot pass folder {folder!r} through nvcc safely")
    return f'-Xcompiler=-iquote,"{folder}"'


def _compile_substituted(tagged: Tagged) -> tuple[str | None, int, str]:
    """Compile the copy; on failure return the errors (the caller decides whose fault)."""
    from nvcc_opt.launcher.copy import write_copy

    job = tagged.job
    then = "failing the candidate" if tagged.candidate else "compiling the original"
    try:
        include = quote_include(job.source)
        copy = write_copy(tagged.source, tagged.plan.applied, job.source, job.output, os.getcwd())
    except (OSError, ValueError) as exc:
        notice(f"could not splice {job.source} ({exc}); {then}")
        return None, 1, ""
    args = [include, *argv.with_source(job, copy)]
    command = tagged.chain.command([*args, *tagged.plan.extra_args])
    out, err = f"{copy}.stdout", f"{copy}.stderr"
    target = argv.object_file(job)
    before = _file_state(target)
    try:
        code = spawn.start(command, _env(), stdout=out, stderr=err).wait()
        with open(out, "rb") as handle:
            stdout = handle.read()
        with open(err, "rb") as handle:
            stderr = handle.read()
    except OSError as exc:
        notice(f"cannot run {command[0]}: {exc.strerror}; {then}")
        return None, 1, ""
    if code == 0 and not _written(target, before):
        # a compile can "succeed" without its object (a dry run, an output put elsewhere)
        why = f"error: the substituted compile exited 0 but did not write {target}"
        return None, 1, f"{why}\n{stderr.decode(errors='replace')}"
    if code == 0:
        sys.stdout.buffer.write(stdout)
        sys.stdout.flush()
        sys.stderr.buffer.write(stderr)
        sys.stderr.flush()
        return copy, 0, ""
    return None, code, stderr.decode(errors="replace") or "compiler failed"


def _file_state(path: str) -> tuple[int, ...] | None:
    """What changes when a compile writes `path` (None: no such file)."""
    try:
        found = os.stat(path)
    except OSError:
        return None
    regular = int(stat.S_ISREG(found.st_mode))
    return (regular, found.st_ino, found.st_size, found.st_mtime_ns, found.st_ctime_ns)


def _written(path: str, before: tuple[int, ...] | None) -> bool:
    """Whether the compile that ran since `before` was taken wrote `path`. Anything but a
    regular file (`-o /dev/null`) cannot tell, and counts as written."""
    if before is not None and not before[0]:
        return True
    after = _file_state(path)
    return after is not None and after != before


def _suspect(tagged: Tagged, errors: str) -> None:
    from nvcc_opt.store import fast

    first = next((line for line in errors.splitlines() if "error" in line), "compiler failed")
    for _, rewrite in tagged.plan.applied:
        reason = f"substituted compile failed: {first.strip()[:300]}"
        try:
            newly = fast.mark_suspect(tagged.store, rewrite.id, reason)
        except fast.FastStoreError:
            newly = True
        if newly:
            notice(
                f"accepted rewrite #{rewrite.id} in {tagged.job.source} failed to compile "
                f"({first.strip()[:200]}); built the original and marked the rewrite suspect "
                f"(nvcc-opt explain {tagged.job.source})"
            )


def _fix_depfile(tagged: Tagged, copy: str | None, stamps: list[str]) -> None:
    job = tagged.job
    if job.depfile_mode is None:
        return
    name = job.depfile
    if name is None:
        output = job.output or os.path.splitext(os.path.basename(job.source))[0] + ".o"
        name = os.path.splitext(output)[0] + ".d"
    try:
        with open(name, encoding="utf-8", errors="surrogateescape") as handle:
            text = handle.read()
        fixed = depfile.fix(text, copy, job.source, stamps, job.dep_phony)
        with open(name, "w", encoding="utf-8", errors="surrogateescape") as handle:
            handle.write(fixed)
    except OSError as exc:
        notice(f"could not update depfile {name} ({exc.strerror})")


def _start_version_probe(compiler: str) -> spawn.Spawned | None:
    try:
        return spawn.start([compiler, "--version"], _env(), pipe=True)
    except OSError:
        return None


def _finish_version_probe(probe: spawn.Spawned | None) -> str:
    if probe is None:
        return ""
    lines = probe.read(PROBE_TIMEOUT_S).decode(errors="replace").strip().splitlines()
    return "\n".join(lines[-2:])


def _record(tagged: Tagged, version: str) -> None:
    """Remember the regions and the command, unless this exact compile was recorded already."""
    job = tagged.job
    context = CompileContext(
        compiler_version=version,
        host_compiler=job.host_compiler,
        flags=job.key_flags,
        nvcc_env=tuple((k, os.environ[k]) for k in NVCC_ENV if k in os.environ),
        file_hash=sha256(tagged.source).hexdigest(),
        targets=job.targets,
    )
    output = os.path.abspath(job.output or os.path.basename(job.source) + ".o")
    command = tagged.chain.command(list(job.args))
    key = repr((tagged.file, output, os.getcwd(), command, context, tagged.regions))
    marker = paths.seen_marker(tagged.store, key)
    if os.path.exists(marker):
        return
    from nvcc_opt.store import fast

    regions = [(r, region_text(tagged.source, r)) for r in tagged.regions]
    try:
        fast.record_compile(
            tagged.store, tagged.file, regions, output, command, os.getcwd(), context
        )
    except fast.FastStoreError as exc:
        from nvcc_opt.launcher import once

        message = f"could not record this compile in {tagged.store} ({exc})"
        if once.first_time(message):
            notice(message)
        return
    paths.mark(paths.seen_marker(tagged.store, key))  # the store may have been created just now
