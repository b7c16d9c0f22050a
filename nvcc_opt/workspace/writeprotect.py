"""Read-only folders without a mount namespace (the subreaper level): protected by permissions
for the length of one run, and checked afterwards for anything the run wrote there.

Every write bit under the folders is cleared before the run and given back after it. Only the
bits this run cleared are given back, so two runs protecting the same folder at once never leave
it read-only (the later one finds nothing to clear; the folder is writable again as soon as the
first ends). Root ignores permissions, so there nothing is changed and the reason is given.

The check is a measurement, for root too: each path's inode, size and change time (ctime, which
every write, rename, chmod and utime sets to the present and no system call sets back) before
and after the run; a path added, removed or changed was written.
"""

from __future__ import annotations

import contextlib
import os
import stat
from collections.abc import Iterator, Sequence
from pathlib import Path

WRITE_BITS = stat.S_IWUSR | stat.S_IWGRP | stat.S_IWOTH
Snapshot = dict[str, tuple[int, int, int]]  # path -> (inode, size, ctime in ns)


class Guard:
    """The read-only folders of one run: `protection` says why they are not protected by
    permissions ("" when they are); `written()` lists what changed there since."""

    def __init__(self, folders: Sequence[Path], keep: Sequence[Path]) -> None:
        self._folders = [str(f) for f in folders]
        self._keep = [str(k) for k in keep]
        self._cleared: list[tuple[str, int]] = []
        self.protection = ""
        if folders and os.geteuid() == 0:
            self.protection = "running as root, which permissions do not bind"
        elif folders:
            failed = [p for p in self._paths() if not self._clear(p)]
            more = f" and {len(failed) - 1} more" if len(failed) > 1 else ""
            if failed:
                self.protection = f"cannot change the permissions of {failed[0]}{more}"
        self._before = self._snapshot()  # after clearing: those changes are not the run's

    def _paths(self) -> Iterator[str]:
        """Every path under the folders but under `keep` folders deeper than them (a writable
        folder inside a read-only one stays writable); symbolic links are not followed."""
        for root in self._folders:
            inner = [k for k in self._keep if _under(k, root) and k != root]
            if not os.path.isdir(root) or os.path.islink(root):
                if os.path.lexists(root):
                    yield root
                continue
            for directory, subdirs, files in os.walk(root):
                subdirs[:] = [d for d in subdirs if not _within(os.path.join(directory, d), inner)]
                yield directory
                yield from (os.path.join(directory, name) for name in files)

    def _snapshot(self) -> Snapshot:
        found: Snapshot = {}
        for path in self._paths():
            with contextlib.suppress(OSError):  # gone, or not ours to read: alike both times
                info = os.lstat(path)
                found[path] = (info.st_ino, info.st_size, info.st_ctime_ns)
        return found

    def _clear(self, path: str) -> bool:
        """Clear `path`'s write bits; False when they could not be cleared."""
        try:
            mode = os.lstat(path).st_mode
            bits = stat.S_IMODE(mode) & WRITE_BITS
            if bits and not stat.S_ISLNK(mode):
                os.chmod(path, stat.S_IMODE(mode) & ~WRITE_BITS)
                self._cleared.append((path, bits))
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return True

    def written(self) -> list[str]:
        """The paths added, removed or changed since the run started."""
        after = self._snapshot()
        paths = sorted(self._before.keys() | after.keys())
        return [p for p in paths if self._before.get(p) != after.get(p)]

    def restore(self) -> None:
        for path, bits in reversed(self._cleared):
            with contextlib.suppress(OSError):  # removed meanwhile: nothing to give back
                os.chmod(path, stat.S_IMODE(os.lstat(path).st_mode) | bits)
        self._cleared = []


@contextlib.contextmanager
def guarded(folders: Sequence[Path], keep: Sequence[Path] = ()) -> Iterator[Guard]:
    """A `Guard` of `folders` for the body; permissions given back when it ends."""
    guard = Guard(folders, keep)
    try:
        yield guard
    finally:
        guard.restore()


def _under(path: str, folder: str) -> bool:
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _within(path: str, folders: list[str]) -> bool:
    return any(_under(path, folder) for folder in folders)
