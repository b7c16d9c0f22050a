"""Where the store and its side files live.

Order: the NVCC_OPT_STORE environment variable; else `store = "..."` in the nearest `nvcc-opt.toml`
at or above the directory asked about (a relative path is relative to that file); else
`$XDG_DATA_HOME/nvcc-opt/store.db` (default `~/.local/share/nvcc-opt/store.db`), which survives
`rm -rf build`. Stamps (one file per region, listed in depfiles so a review decision rebuilds
exactly the affected objects) and once-only notices live in folders beside the database.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

ENV_STORE = "NVCC_OPT_STORE"
CONFIG_NAME = "nvcc-opt.toml"


def default_store() -> Path:
    data = os.environ.get("XDG_DATA_HOME") or os.path.join(
        os.path.expanduser("~"), ".local", "share"
    )
    return Path(data) / "nvcc-opt" / "store.db"


def find_config(start: str | os.PathLike[str]) -> Path | None:
    here = Path(start).resolve()
    for folder in (here, *here.parents):
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
    return None


def configured_store(config: Path) -> Path | None:
    """The `store` key of a config file, or None. A broken file raises ValueError naming it."""
    import tomllib

    try:
        data = tomllib.loads(config.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ValueError(f"{config}: {exc}") from exc
    value = data.get("store")
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise ValueError(f"{config}: `store` must be a non-empty path string")
    return (config.parent / os.path.expanduser(value)).resolve()


def store_path(near: str | os.PathLike[str] | None = None) -> Path:
    env = os.environ.get(ENV_STORE)
    if env:
        return Path(env).expanduser().resolve()
    config = find_config(near if near is not None else os.getcwd())
    if config is not None:
        configured = configured_store(config)
        if configured is not None:
            return configured
    return default_store()


def stamp_path(store: Path, file: str, region_name: str) -> Path:
    """The stamp file of one region; touched when the rewrite applied to it changes."""
    digest = hashlib.sha256(f"{file}\0{region_name}".encode()).hexdigest()[:32]
    return store.parent / "stamps" / f"{digest}.stamp"


# A new stamp is dated long ago: it is created during the compile that lists it, and Ninja 1.12+
# records an output's time as its command's start, so a stamp dated "now" would rebuild the object
# on every build. A decision dates it now (touch_stamp), which is newer than any object.
NEW_STAMP_TIME = 946684800  # 2000-01-01


def ensure_stamp(path: Path) -> None:
    """Create the stamp if missing (dated long ago), never touching an existing one."""
    if path.exists():
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except FileExistsError:
        return
    try:
        os.utime(fd, (NEW_STAMP_TIME, NEW_STAMP_TIME))
    finally:
        os.close(fd)


def touch_stamp(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.utime(path)


def say_once(store: Path, message: str) -> bool:
    """True the first time this message is asked about for this store (then print it)."""
    digest = hashlib.sha256(message.encode()).hexdigest()[:32]
    marker = store.parent / "said" / digest
    try:
        marker.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
    except OSError:
        return False
    os.close(fd)
    return True
