"""`nvcc-opt init`: a commented nvcc-opt.toml for the CMake build tree found at the root.

The comments are the models' field descriptions, so the starting file and the validation cannot
drift apart. Keys without a value (or an empty one) are written commented out, with an example.
"""

from __future__ import annotations

import json
import os
import re
import textwrap
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel

from nvcc_opt.config import architectures, launcher, targets
from nvcc_opt.config.model import ConfigError, Settings
from nvcc_opt.config.project import PYPROJECT, find_build_trees, has_tool_table, read_cmake_cache
from nvcc_opt.paths import CONFIG_NAME


@dataclass(frozen=True)
class Found:
    """What init found at the root."""

    root: Path
    build_dir: Path
    cache: dict[str, str]
    run_script: Path | None


def discover(root: Path, build: Path | None = None) -> Found:
    """The build tree (`build`, else the one under `root`) and the run script, if any."""
    root = root.resolve()
    if build is not None:
        tree = (root / build).resolve()
        if not (tree / "CMakeCache.txt").is_file():
            raise ConfigError(f"{tree}: no CMakeCache.txt; configure it first (cmake -B {build})")
    else:
        tree = _only_tree(root)
    return Found(root, tree, read_cmake_cache(tree), _run_script(root))


def _only_tree(root: Path) -> Path:
    trees = find_build_trees(root)
    if (root / "build") in trees:
        return root / "build"
    if len(trees) == 1:
        return trees[0]
    if not trees:
        raise ConfigError(
            f"{root}: no CMake build tree (a folder with CMakeCache.txt) here or below; "
            "configure one first (cmake -S . -B build) or name it with --build"
        )
    names = ", ".join(os.path.relpath(t, root) for t in trees)
    raise ConfigError(f"{root}: several build trees ({names}); choose one with --build")


def _run_script(root: Path) -> Path | None:
    candidates = [
        root / "run.sh",
        *sorted(root.glob("run*.sh")),
        *sorted(root.glob("scripts/run*.sh")),
    ]
    return next((c for c in candidates if c.is_file()), None)


def build_command(cache: dict[str, str]) -> str:
    """`cmake --build {build}`, choosing Release (or the first) in a multi-config tree."""
    types = [t for t in cache.get("CMAKE_CONFIGURATION_TYPES", "").split(";") if t]
    if not types:
        return "cmake --build {build}"
    return f"cmake --build {{build}} --config {'Release' if 'Release' in types else types[0]}"


def run_command(found: Found) -> str | None:
    if found.run_script is None:
        return None
    script = os.path.relpath(found.run_script, found.root)
    if os.access(found.run_script, os.X_OK):
        return f"./{script} {{build}}"
    return f"sh {script} {{build}}"


def render(found: Found) -> str:
    """The text of the starting file."""
    values: dict[tuple[str, str], object] = {
        ("build", "dir"): os.path.relpath(found.build_dir, found.root),
        ("build", "command"): build_command(found.cache),
        ("run", "command"): run_command(found),
    }
    lines = [
        "# nvcc-opt project configuration, written by `nvcc-opt init`; every key is optional.",
        "# Placeholders in commands and paths: {build} the build tree in use (yours, or a private",
        "# copy nvcc-opt configures), {source} the source folder (`source`, else this folder),",
        "# {gpu} the run's GPU, {work} a scratch folder private to one run.",
        "# `nvcc-opt init --force` rewrites this file.",
        "",
        *_comment(_field_help(Settings, "store")),
        f"# store = {_toml('.nvcc-opt/store.db')}",
        "",
        *_comment(_field_help(Settings, "source")),
        f"# source = {_toml('.')}",
    ]
    for name, field in Settings.model_fields.items():
        section = field.annotation
        if isinstance(section, type) and issubclass(section, BaseModel):
            lines += ["", f"# {field.description}", f"[{name}]"]
            lines += _table(name, section, values)
    return "\n".join(lines) + "\n"


def _table(name: str, section: type[BaseModel], values: dict[tuple[str, str], object]) -> list[str]:
    lines: list[str] = []
    for key, field in section.model_fields.items():
        value = values.get((name, key), field.get_default(call_default_factory=True))
        lines += _comment(field.description or "")
        if value is None or value == () or value == {}:
            example = field.examples[0] if field.examples else None
            if example is not None:
                lines.append(f"# {key} = {_toml(example)}")
        else:
            lines.append(f"{key} = {_toml(value)}")
    return lines


def _field_help(model: type[BaseModel], key: str) -> str:
    return model.model_fields[key].description or ""


def _comment(text: str) -> list[str]:
    return [f"# {line}" for line in textwrap.wrap(text, width=96)]


def _toml(value: object) -> str:
    """A TOML value; strings with backslashes (regexes) as literal strings."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, re.Pattern):
        return _toml(value.pattern)
    if isinstance(value, str):
        if "\\" in value and "'" not in value and "\n" not in value:
            return f"'{value}'"
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    raise TypeError(f"no TOML form for {value!r}")


def summary(found: Found) -> list[str]:
    """What init found, and what the user must still decide."""
    cache, root = found.cache, found.root
    home = cache.get("CMAKE_HOME_DIRECTORY", "?")
    lines = [
        f"build tree: {os.path.relpath(found.build_dir, root)} ({cache.get('CMAKE_GENERATOR', '?')}"
        f", {cache.get('CMAKE_BUILD_TYPE') or 'no build type'}, source {home})",
        *_architecture_lines(found.build_dir),
    ]
    if home != "?" and Path(home).resolve() != root:
        lines.append(f"note: that tree builds {home}, not this folder")
    if "CMAKE_CUDA_COMPILER" not in cache:
        lines.append("note: that tree has no CUDA compiler configured")
    lines += _launcher_lines(found)
    lines += targets.tagged_lines(found.build_dir, root)
    command = run_command(found)
    if command is None:
        lines.append("fill in: [run] command (no run.sh, run*.sh or scripts/run*.sh found)")
    else:
        lines.append(f'run: command = "{command}" (check that it takes the build tree first)')
    lines.append(
        "decide: [time] (now: wall time of the whole run) and [check] (now: exit status only)"
    )
    return lines


def _launcher_lines(found: Found) -> list[str]:
    """Whether the tree builds through nvcc-opt by absolute path, and the command that makes it."""
    current = found.cache.get("CMAKE_CUDA_COMPILER_LAUNCHER", "")
    entries = [e for e in current.split(";") if e]
    fix = (
        f"cmake -B {os.path.relpath(found.build_dir, found.root)} {launcher.cmake_setting(current)}"
    )
    if not any(os.path.basename(e) == launcher.NAME for e in entries):
        return [
            f"note: it does not build through nvcc-opt yet; accepted rewrites reach it after {fix}"
        ]
    if any(launcher.is_bare(e) for e in entries):
        return [
            f"note: its launcher names nvcc-opt without a folder ({current}): compiles fail in a "
            f"shell where nvcc-opt is not on PATH (a virtual environment not active); {fix}"
        ]
    return []


def _architecture_lines(build_dir: Path) -> list[str]:
    """The architectures the tree compiles for, and a note when the cache's default differs."""
    found = architectures.read(build_dir)
    lines = [f"CUDA architectures: {found.describe()}"]
    cached = architectures.cached_value(build_dir)
    if found.source != "CMakeCache.txt" and cached and tuple(cached.split(";")) != found.values:
        lines.append(
            f"note: CMakeCache.txt says CMAKE_CUDA_ARCHITECTURES={cached}, a default the targets "
            "override (their CUDA_ARCHITECTURES, or the variable set in CMakeLists.txt)"
        )
    return lines


def write(root: Path, build: Path | None = None, force: bool = False) -> tuple[Path, list[str]]:
    """Write root/nvcc-opt.toml (only over an existing one when `force`); (path, summary)."""
    found = discover(root, build)
    target = root / CONFIG_NAME
    try:
        with target.open("w" if force else "x", encoding="utf-8") as out:
            out.write(render(found))
    except FileExistsError:
        raise ConfigError(f"{target} exists; --force replaces it") from None
    except OSError as exc:
        raise ConfigError(f"{target}: cannot write: {exc.strerror}") from exc
    notes = summary(found)
    if has_tool_table(root / PYPROJECT):
        notes.append(f"note: {PYPROJECT}'s [tool.nvcc-opt] is ignored while {CONFIG_NAME} exists")
    return target, notes
