"""After the compiler ran: the depfile names the original source and the region stamps, a
rewrite whose substituted compile failed is marked suspect, and the compile is recorded in the
store (the database is opened only when this exact compile has no `seen/` marker yet).
"""

from __future__ import annotations

import os

from nvcc_opt import paths
from nvcc_opt._sha import sha256
from nvcc_opt.launcher import depfile
from nvcc_opt.launcher.notices import notice
from nvcc_opt.regions.scan import region_text
from nvcc_opt.values import CompileContext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from nvcc_opt.launcher.prepare import Tagged

NVCC_ENV = ("NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
BUSY = "database is locked"  # SQLite's SQLITE_BUSY, as the store's error carries it


def suspect(tagged: Tagged, errors: str) -> None:
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


def fix_depfile(tagged: Tagged, copy: str | None, stamps: list[str]) -> None:
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


def record(tagged: Tagged, version: str) -> None:
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

        if BUSY in str(exc):  # a passing lock: each compile it left out is named
            notice(
                f"could not record the compile of {job.source} in {tagged.store} ({exc}); its "
                "regions reach the store when it is compiled again"
            )
            return
        message = f"could not record this compile in {tagged.store} ({exc})"
        if once.first_time(message):  # a store this build cannot write: said once per build
            notice(message)
        return
    paths.mark(paths.seen_marker(tagged.store, key))  # the store may have been created just now
