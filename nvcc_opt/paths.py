"""Where the store and its side files live.

Order: the NVCC_OPT_STORE environment variable; else `store = "..."` in the nearest `nvcc-opt.toml`
at or above the directory asked about (a relative path is relative to that file); else
`$XDG_DATA_HOME/nvcc-opt/store.db` (default `~/.local/share/nvcc-opt/store.db`), which survives
`rm -rf build`. Beside the database: `stamps/` (one file per region, listed in depfiles so a
review decision rebuilds exactly the affected objects), `accepted-files` (the files that have
accepted rewrites, so a compile of any other file never opens the database), `seen/` (compiles
already recorded) and `said/` (one-time notices).

The launcher calls the str-based functions (`os.path` only: pathlib costs milliseconds of start-up
on every compile); commands use the Path wrappers.
"""

from __future__ import annotations

import os

from nvcc_opt._sha import sha256

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from pathlib import Path

ENV_STORE = "NVCC_OPT_STORE"
CONFIG_NAME = "nvcc-opt.toml"
ACCEPTED_INDEX = "accepted-files"
# A new stamp is dated long ago: it is created during the compile that lists it, and Ninja 1.12+
# records an output's time as its command's start, so a stamp dated "now" would rebuild the object
# on every build. A decision dates it now (touch_stamp), which is newer than any object.
NEW_STAMP_TIME = 946684800  # 2000-01-01


def default_store_file() -> str:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return os.path.join(data, "nvcc-opt", "store.db")


def find_config_file(start: str) -> str | None:
    folder = os.path.realpath(start)
    while True:
        candidate = os.path.join(folder, CONFIG_NAME)
        if os.path.isfile(candidate):
            return candidate
        parent = os.path.dirname(folder)
        if parent == folder:
            return None
        folder = parent


def configured_store_file(config: str) -> str | None:
    """The `store` key of a config file, or None. A broken file raises ValueError naming it."""
    import tomllib

    try:
        with open(config, "rb") as handle:
            data = tomllib.load(handle)
    except (OSError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{config}: {exc}") from exc
    value = data.get("store")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{config}: `store` must be a non-empty path string")
    folder = os.path.dirname(config)
    return os.path.realpath(os.path.join(folder, os.path.expanduser(value)))


def store_file(near: str | None = None) -> str:
    env = os.environ.get(ENV_STORE)
    if env:
        return os.path.realpath(os.path.expanduser(env))
    config = find_config_file(near if near is not None else os.getcwd())
    if config is not None:
        configured = configured_store_file(config)
        if configured is not None:
            return configured
    return default_store_file()


def store_path(near: str | os.PathLike[str] | None = None) -> Path:
    from pathlib import Path

    return Path(store_file(None if near is None else os.fspath(near)))


def default_store() -> Path:
    from pathlib import Path

    return Path(default_store_file())


def stamp_file(store: str | os.PathLike[str], file: str, region_name: str) -> str:
    """The stamp file of one region; touched when the rewrite applied to it changes."""
    digest = sha256(f"{file}\0{region_name}".encode(errors="surrogateescape")).hexdigest()[:32]
    return os.path.join(os.path.dirname(os.fspath(store)), "stamps", f"{digest}.stamp")


def stamp_path(store: str | os.PathLike[str], file: str, region_name: str) -> Path:
    from pathlib import Path

    return Path(stamp_file(store, file, region_name))


def ensure_stamp(path: str | os.PathLike[str]) -> None:
    """Create the stamp if missing (dated long ago), never touching an existing one."""
    if os.path.exists(path):
        return
    os.makedirs(os.path.dirname(os.fspath(path)), exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    try:
        os.utime(fd, (NEW_STAMP_TIME, NEW_STAMP_TIME))
    finally:
        os.close(fd)


def touch_stamp(path: str | os.PathLike[str]) -> None:
    os.makedirs(os.path.dirname(os.fspath(path)), exist_ok=True)
    with open(path, "a"):
        pass
    os.utime(path)


def say_once(store: str | os.PathLike[str], message: str) -> bool:
    """True the first time this message is asked about for this store (then print it)."""
    digest = sha256(message.encode()).hexdigest()[:32]
    marker = os.path.join(os.path.dirname(os.fspath(store)), "said", digest)
    try:
        os.makedirs(os.path.dirname(marker), exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError:
        return False
    os.close(fd)
    return True


def accepted_index(store: str | os.PathLike[str]) -> str:
    return os.path.join(os.path.dirname(os.fspath(store)), ACCEPTED_INDEX)


def may_have_accepted(store: str, file: str) -> bool:
    """False only when the index says `file` has no accepted rewrite (no need to open the db).

    A missing or unreadable index answers True: the database decides."""
    try:
        with open(accepted_index(store), encoding="utf-8", errors="surrogateescape") as handle:
            return file in handle.read().split("\n")
    except OSError:
        return True


def write_accepted_index(store: str | os.PathLike[str], files: Iterable[str]) -> None:
    """Replace the index atomically (the store calls this after every decision). A path that
    cannot be written one per line removes the index: the database then always decides."""
    path = accepted_index(store)
    names = sorted(set(files))
    if any("\n" in name for name in names):
        if os.path.exists(path):
            os.unlink(path)
        return
    temporary = f"{path}.{os.getpid()}.tmp"
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(temporary, "w", encoding="utf-8", errors="surrogateescape") as handle:
        handle.write("".join(f"{name}\n" for name in names))
    os.replace(temporary, path)


def seen_marker(store: str, key: str) -> str:
    """The marker of a compile already recorded: `key` covers everything the record holds."""
    try:
        inode = os.stat(store).st_ino  # a new database (same path) starts with no markers
    except OSError:
        inode = 0
    digest = sha256(f"{inode}\0{key}".encode(errors="surrogateescape")).hexdigest()[:40]
    return os.path.join(os.path.dirname(store), "seen", digest)


def mark(path: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "a"):
        pass
