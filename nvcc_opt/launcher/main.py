"""The launcher's slow path: a compile whose source holds `@optimize`.

Fails open: any problem in here runs the original command unchanged and says why, briefly; so
does a substituted compile that exits 0 without writing its object (it counts as failed). Exit
code, stdout and stderr of the compiler pass through; with no accepted rewrite the compiler runs on
the original arguments, so the object is the one plain nvcc makes. What the compile will do is
decided in `prepare`; what follows it is in `after_compile`.

Start-up counts on every tagged compile: only the standard library's cheapest modules load here;
the database is opened only when the accepted-files index names this file or a compile has not
been recorded yet (`seen/` markers).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys

from nvcc_opt import paths
from nvcc_opt.commands import GUARD
from nvcc_opt.launcher import argv, candidate, spawn
from nvcc_opt.launcher.after_compile import fix_depfile, record, suspect
from nvcc_opt.launcher.notices import notice, storable
from nvcc_opt.launcher.prepare import Tagged, prepare

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

PROBE_TIMEOUT_S = 30.0


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
                _after_compile(suspect, tagged, errors)
    else:
        code = _call(original)
    if tagged.candidate:
        stamps.append(os.environ[candidate.ENV])  # a new candidate rebuilds this object
    if code == 0:
        _after_compile(fix_depfile, tagged, copy, stamps)
    if not (tagged.candidate or os.environ.get(candidate.PRIVATE)) and storable(tagged.file):
        _after_compile(lambda: record(tagged, _finish_version_probe(version)))
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
    from nvcc_opt.launcher.copy import BESIDE, write_copy

    job = tagged.job
    then = "failing the candidate" if tagged.candidate else "compiling the original"
    beside = os.environ.get(BESIDE) if tagged.candidate else None  # a unit compiled for analysis
    try:
        include = quote_include(job.source)
        applied, cwd = tagged.plan.applied, os.getcwd()
        copy = write_copy(tagged.source, applied, job.source, job.output, cwd, beside)
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
    finally:
        for made in (copy, out, err) if beside else ():
            with contextlib.suppress(OSError):
                os.unlink(made)  # its name must stay unknown: nothing of it is left
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
