"""The suite's apps: the folders that are apps, the shared folders beside them, their tagged
regions and build folders.
"""

from __future__ import annotations

import tomllib
from collections.abc import Sequence
from pathlib import Path

from pydantic import ValidationError

from nvcc_opt.bench.results import REASON_CHARS, Kernel, first_line
from nvcc_opt.config import ConfigError
from nvcc_opt.config.model import Settings
from nvcc_opt.paths import CONFIG_NAME
from nvcc_opt.regions.scan import scan


class SuiteError(RuntimeError):
    """The bench cannot start: no suite folder, no apps, an unknown --only name, bad --gpus."""


def find_apps(suite: Path, only: Sequence[str] = ()) -> list[Path]:
    """The suite's apps (folders with nvcc-opt.toml and CMakeLists.txt), sorted by name, or the
    ones `only` names in its order (a time-limited slice runs the most wanted first). SuiteError
    when there is no suite, no app, or an unknown name."""
    if not suite.is_dir():
        raise SuiteError(f"{suite}: no such suite folder")
    apps = sorted(
        p
        for p in suite.iterdir()
        if p.is_dir() and (p / CONFIG_NAME).is_file() and (p / "CMakeLists.txt").is_file()
    )
    if only:
        names = {p.name for p in apps}
        unknown = [n for n in only if n not in names]
        if unknown:
            raise SuiteError(
                f"--only: no app named {', '.join(unknown)} in {suite} "
                f"(apps: {', '.join(sorted(names)) or 'none'})"
            )
        by_name = {p.name: p for p in apps}
        apps = [by_name[name] for name in dict.fromkeys(only)]
    if not apps:
        raise SuiteError(f"{suite}: no apps (folders with {CONFIG_NAME} and CMakeLists.txt)")
    return apps


def shared_folders(suite: Path) -> list[Path]:
    """The suite's folders that are not apps (headers the apps share): each run's copy of an
    app gets them beside it, so paths like `../common` resolve as in the suite."""
    return sorted(
        p
        for p in suite.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not (p / CONFIG_NAME).is_file()
    )


# The launcher substitutes regions only in the file nvcc compiles, an app's .cu files (README,
# "Regions"): a region tagged in a header it includes is recorded by no build, and a .cpp file goes
# to the host compiler, never through the launcher. Headers are scanned only to say so.
REGION_SUFFIXES = frozenset({".cu"})


def app_kernels(
    app: Path, skip: str | None = None, suffixes: frozenset[str] = REGION_SUFFIXES
) -> list[Kernel]:
    """The tagged regions of the app's files with one of `suffixes` (its .cu files by default),
    not under its build folder `skip`."""
    found = []
    skip_dir = (app / skip).resolve() if skip else None
    for path in sorted(app.rglob("*")):
        if path.suffix not in suffixes or not path.is_file():
            continue
        if skip_dir is not None and path.resolve().is_relative_to(skip_dir):
            continue
        try:
            spans = scan(path.read_bytes()).regions
        except OSError:
            continue
        rel = path.relative_to(app).as_posix()
        found += [Kernel(app.name, rel, span.name) for span in spans]
    return found


def build_dir_name(app: Path) -> str:
    """`[build] dir` of the app's nvcc-opt.toml. ConfigError when the file is not valid."""
    file = app / CONFIG_NAME
    try:
        data = tomllib.loads(file.read_text(encoding="utf-8"))
        return Settings.model_validate(data).build.dir
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValidationError) as exc:
        raise ConfigError(f"{file}: {first_line(str(exc), REASON_CHARS)}") from exc


def scanned_kernels(app: Path) -> list[Kernel]:
    """The app's tagged regions outside its build folder (all of them when its configuration
    cannot be read: the run then fails and names why)."""
    try:
        return app_kernels(app, build_dir_name(app))
    except ConfigError:
        return app_kernels(app)
