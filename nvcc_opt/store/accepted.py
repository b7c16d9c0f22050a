"""Which accepted rewrites a compile of a file gets: the one answer the launcher and `nvcc-opt
explain` share, so that what `explain` says is what the next build does.

The accepted-files index comes first (a file it does not list never opens the database), then
the database, read-only, waiting at most `connections.COMPILE_TIMEOUT_S` for a lock. Standard
library only: this runs on every tagged compile.
"""

from __future__ import annotations

import os

from nvcc_opt import paths
from nvcc_opt.store.connections import DAMAGED, LOCKED, OTHER, READ_ONLY
from nvcc_opt.values import AcceptedRewrite, Value

__all__ = ["DAMAGED", "LOCKED", "OTHER", "READ_ONLY", "Lookup", "lookup"]
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

# Where the answer came from.
NO_STORE = "no store"
INDEX = "index"  # the accepted-files index does not list the file: the database was not read
DATABASE = "database"
FAILED = "failed"  # the store could not be read: `problem` says why; the build uses no rewrite


class Lookup(Value):
    __slots__ = ("rewrites", "source", "problem", "cause")
    rewrites: tuple[AcceptedRewrite, ...]
    source: str
    problem: str  # "" or why the store could not be read
    cause: str  # "" or one of connections.LOCKED, DAMAGED, READ_ONLY, OTHER

    def __init__(
        self,
        rewrites: tuple[AcceptedRewrite, ...],
        source: str,
        problem: str = "",
        cause: str = "",
    ) -> None:
        self._set(rewrites=rewrites, source=source, problem=problem, cause=cause)


def lookup(store: str, file: str, hashes: Sequence[str], timeout: float | None = None) -> Lookup:
    """The accepted rewrites of `file` (a real absolute path) for these region text hashes."""
    if not os.path.exists(store):
        return Lookup((), NO_STORE)
    if not paths.may_have_accepted(store, file):
        return Lookup((), INDEX)
    from nvcc_opt.store import fast

    wait = fast.TIMEOUT_S if timeout is None else timeout
    try:
        found = fast.accepted_for(store, file, hashes, wait)
    except fast.FastStoreError as exc:
        return Lookup((), FAILED, str(exc), exc.cause)
    return Lookup(tuple(found), DATABASE)
