"""`--from suite DIR` and `--from apps DIR`: one problem per app, its tagged regions as they are.

An app is a folder with an nvcc-opt.toml and at least one tagged region. The suite's apps also
have a CMakeLists.txt (nvcc-opt's own `benchmarks/suite`, found by `bench.apps.find_apps`); a
folder of apps may hold any build the app's nvcc-opt.toml describes. The folders beside the apps
that are not apps (the suite's `common/`) are copied to `dest/<name>` so that `../common` still
resolves from `dest/<id>`. The app's own build folder, hidden folders and files over a size
limit are not copied.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import tomllib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

from nvcc_opt.bench.apps import SuiteError, app_kernels, find_apps, shared_folders
from nvcc_opt.paths import CONFIG_NAME
from nvcc_opt.regions.headers import HEADER_SUFFIXES
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.tools.ptxas import code_only, kernels
from nvcc_opt_train.importers import Skip
from nvcc_opt_train.problemset import Problem

MAX_FILE_BYTES = 20_000_000  # data a run writes, a stray binary: not part of a problem


class AppsError(ValueError):
    """The source folder cannot be imported at all (no folder, no apps, unknown --only)."""


@dataclass(frozen=True)
class AppsOptions:
    only: tuple[str, ...] = ()  # app names, in this order; () for all


def import_suite(
    suite: Path, dest: Path, options: AppsOptions, say: Callable[[str], None]
) -> Iterator[Problem | Skip]:
    """The apps of nvcc-opt's suite (nvcc-opt.toml + CMakeLists.txt), ids `suite-<app>`."""
    try:
        apps = find_apps(suite, options.only)
    except SuiteError as exc:
        raise AppsError(str(exc)) from exc
    yield from _import(apps, suite, dest, "suite", say)


def import_apps(
    root: Path, dest: Path, options: AppsOptions, say: Callable[[str], None]
) -> Iterator[Problem | Skip]:
    """Every folder of `root` with an nvcc-opt.toml, ids `apps-<app>`."""
    if not root.is_dir():
        raise AppsError(f"{root}: no such folder of apps")
    apps = sorted(p for p in root.iterdir() if p.is_dir() and (p / CONFIG_NAME).is_file())
    if options.only:
        by_name = {p.name: p for p in apps}
        unknown = [n for n in options.only if n not in by_name]
        if unknown:
            raise AppsError(f"--only: no app named {', '.join(unknown)} in {root}")
        apps = [by_name[n] for n in dict.fromkeys(options.only)]
    if not apps:
        raise AppsError(f"{root}: no apps (folders with {CONFIG_NAME})")
    yield from _import(apps, root, dest, "apps", say)


def _import(
    apps: list[Path], root: Path, dest: Path, source: str, say: Callable[[str], None]
) -> Iterator[Problem | Skip]:
    dest.mkdir(parents=True, exist_ok=True)
    for shared in shared_folders(root):
        if not (dest / shared.name).exists():
            _copy(shared, dest / shared.name, skip=None)
    for app in apps:
        build = _build_dir(app)
        tagged = app_kernels(app, build)
        in_headers = [f"{k.file}:{k.region}" for k in app_kernels(app, build, HEADER_SUFFIXES)]
        left_out = (
            f"left out: {', '.join(in_headers)}: tagged in a header, and the launcher substitutes "
            "regions only in the file nvcc compiles (move the kernel into its .cu file)"
        )
        if not tagged:
            why = left_out if in_headers else "no tagged region (// @optimize) in its .cu files"
            yield Skip(source, app.name, why)
            continue
        problem_id = f"{source}-{app.name}"
        target = dest / problem_id
        if not target.exists():
            _copy(app, target, skip=build)
            say(f"{problem_id}: {len(tagged)} region(s)")
        texts = [_region_text(target / k.file, k.region) for k in tagged]
        text = "\n".join(texts)
        names = [k.name for k in kernels(code_only(text))[0]]
        yield Problem(
            id=problem_id,
            source=source,
            benchmark=app.name,
            regions=tuple(f"{k.file}:{k.region}" for k in tagged),
            kernels=tuple(dict.fromkeys(names)),
            kind="app",
            region_text=text,
            notes=(left_out,) if in_headers else (),
        )


def _build_dir(app: Path) -> str | None:
    """The app's `[build] dir` when it is a folder inside the app (not copied), else None (the
    app itself, as a Makefile that builds beside its sources, or somewhere outside)."""
    try:
        data = tomllib.loads((app / CONFIG_NAME).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return "build"  # the default; the build check reports the file's own error
    build = data.get("build", {})
    name = build.get("dir", "build") if isinstance(build, dict) else "build"
    if not isinstance(name, str) or os.path.isabs(name):
        return None
    name = os.path.normpath(name)
    return None if name == "." or name.startswith("..") else name  # builds beside its sources


def _region_text(path: Path, region: str) -> str:
    data = path.read_bytes()
    for span in scan(data).regions:
        if span.name == region:
            return region_text(data, span)
    return ""


def _copy(src: Path, target: Path, skip: str | None) -> None:
    """Copy `src` to `target` whole or not at all (a temporary folder renamed into place)."""
    skipped = (src / skip).resolve() if skip else None

    def ignore(folder: str, names: list[str]) -> list[str]:
        def left_out(path: Path) -> bool:
            if path.name.startswith(".") or (skipped is not None and path.resolve() == skipped):
                return True
            return path.is_file() and path.stat().st_size > MAX_FILE_BYTES

        return [name for name in names if left_out(Path(folder) / name)]

    tmp = Path(tempfile.mkdtemp(dir=target.parent, prefix=f".{target.name}."))
    try:
        shutil.copytree(src, tmp / "copy", ignore=ignore, symlinks=True)
        os.rename(tmp / "copy", target)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
