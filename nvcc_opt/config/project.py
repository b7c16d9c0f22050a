"""Loading a project's configuration, and what it renders for a build or a run.

The file is `nvcc-opt.toml` at the project root, else the `[tool.nvcc-opt]` table of its
pyproject.toml; without either, defaults with the one CMake build tree found under the root.
"""

from __future__ import annotations

import os
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from nvcc_opt.config.errors import describe, describe_toml_error, line_of
from nvcc_opt.config.model import BuildConfig, ConfigError, Settings, render
from nvcc_opt.paths import CONFIG_NAME

PYPROJECT = "pyproject.toml"
TOOL_TABLE = ("tool", "nvcc-opt")
_TOOL_HEADER = re.compile(r'^\s*\[\s*tool\s*\.\s*(nvcc-opt|"nvcc-opt")\s*[\].]', re.MULTILINE)


class ProjectConfig(Settings):
    """A loaded configuration: the settings plus where they came from.

    `root` is the project root (absolute), `file` the file read (None when defaults were used).
    """

    root: Path
    file: Path | None = None

    @property
    def build_dir(self) -> Path:
        """The user's build tree, absolute."""
        return Path(os.path.normpath(self.root / os.path.expanduser(self.build.dir)))

    @property
    def source_root(self) -> Path:
        """The project's source folder (the `source` key, else the root), absolute."""
        if self.source is None:
            return self.root
        return Path(os.path.normpath(self.root / os.path.expanduser(self.source)))

    @property
    def store_path(self) -> Path | None:
        """The `store` key, absolute (the build finds it through paths.store_path)."""
        return (
            None if self.store is None else (self.root / os.path.expanduser(self.store)).resolve()
        )

    def render_build(self, build_dir: Path) -> list[str]:
        """The build command for `build_dir` (the user's tree or a private one)."""
        values = {"build": str(build_dir), "source": str(self.source_root)}
        return render(self.build.command, values)

    def check_run_command(self) -> tuple[str, ...]:
        """The [run] command's words; ConfigError naming this file when it is not set."""
        if self.run.command is None:
            raise ConfigError(
                f"{self._where()}: [run] command: not set; name the command that runs your "
                'application, e.g. command = "./run.sh {build}"'
            )
        return self.run.command

    def render_run(self, build_dir: Path, gpu: str, work: Path | None = None) -> list[str]:
        """The run command; a relative program path with a slash is made absolute from the
        run's folder, where a shell started there would find it."""
        argv = render(self.check_run_command(), self._values(build_dir, gpu, work))
        if "/" in argv[0] and not os.path.isabs(argv[0]):
            argv[0] = os.path.normpath(self.run_cwd(build_dir, gpu, work) / argv[0])
        return argv

    def run_cwd(self, build_dir: Path, gpu: str, work: Path | None = None) -> Path:
        """The folder a run starts in ([run] cwd, relative to the root)."""
        cwd = render((self.run.cwd,), self._values(build_dir, gpu, work))[0]
        return Path(os.path.normpath(self.root / cwd))

    def run_env(self, build_dir: Path, gpu: str, work: Path | None = None) -> dict[str, str]:
        """What a run adds to the environment: [run] env and CUDA_VISIBLE_DEVICES=gpu."""
        values = self._values(build_dir, gpu, work)
        env = {name: render((value,), values)[0] for name, value in self.run.env.items()}
        return {**env, "CUDA_VISIBLE_DEVICES": gpu}

    def output_path(self, name: str, build_dir: Path, gpu: str, work: Path | None = None) -> Path:
        """A file a run writes ([time] file, [check] files), relative to the run's folder."""
        rendered = render((name,), self._values(build_dir, gpu, work))[0]
        return Path(os.path.normpath(self.run_cwd(build_dir, gpu, work) / rendered))

    def _values(self, build_dir: Path, gpu: str, work: Path | None) -> dict[str, str]:
        values = {"build": str(build_dir), "source": str(self.source_root), "gpu": gpu}
        if work is not None:
            values["work"] = str(work)
        return values

    def _where(self) -> str:
        return str(self.file) if self.file is not None else str(self.root / CONFIG_NAME)


def find_root(start: Path) -> Path | None:
    """The nearest folder at or above `start` with nvcc-opt.toml or a [tool.nvcc-opt] table."""
    here = start.resolve()
    for folder in (here, *here.parents):
        if (folder / CONFIG_NAME).is_file() or has_tool_table(folder / PYPROJECT):
            return folder
    return None


def has_tool_table(pyproject: Path) -> bool:
    try:
        return _TOOL_HEADER.search(pyproject.read_text(encoding="utf-8")) is not None
    except (OSError, UnicodeDecodeError):
        return False


def load(root: Path) -> ProjectConfig:
    """The configuration at `root`: nvcc-opt.toml, else [tool.nvcc-opt] in pyproject.toml, else
    defaults with the one CMake build tree found under `root`. ConfigError for anything wrong."""
    file = root / CONFIG_NAME
    prefix: tuple[str, ...] = ()
    if not file.is_file():
        file, prefix = root / PYPROJECT, TOOL_TABLE
    data: dict[str, Any] | None = None
    text = ""
    if file.is_file():
        text, whole = _read_toml(file)
        data = _tool_table(whole, file) if prefix else whole
    if data is None:
        return _defaults(root)
    if prefix and "store" in data:
        raise ConfigError(
            f"{file}:{line_of(text, (*prefix, 'store'))}: [tool.nvcc-opt] store: the "
            f"build reads `store` only from {CONFIG_NAME}; put it there"
        )
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(describe(file, text, prefix, exc, Settings)) from exc
    config = _project(settings, root, file)
    if not config.source_root.is_dir():
        line = line_of(text, (*prefix, "source"))
        raise ConfigError(
            f"{file}:{line}: source: {config.source_root} is not a folder; name the project's "
            "source folder, relative to this file"
        )
    if not config.build_dir.is_dir():
        line = line_of(text, (*prefix, "build", "dir"))
        raise ConfigError(
            f"{file}:{line}: [build] dir: {config.build_dir} is not a folder; configure the "
            f"build there first (cmake -S {config.root} -B {config.build_dir}) or name your "
            "build tree"
        )
    return config


def _project(settings: Settings, root: Path, file: Path | None) -> ProjectConfig:
    fields = {name: getattr(settings, name) for name in Settings.model_fields}
    return ProjectConfig(root=root.resolve(), file=file, **fields)


def _read_toml(file: Path) -> tuple[str, dict[str, Any]]:
    try:
        text = file.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{file}: cannot read: {exc}") from exc
    try:
        return text, tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(describe_toml_error(file, exc)) from exc


def _tool_table(whole: dict[str, Any], file: Path) -> dict[str, Any] | None:
    table = whole.get("tool", {}).get("nvcc-opt") if isinstance(whole.get("tool"), dict) else None
    if table is None or isinstance(table, dict):
        return table
    raise ConfigError(f"{file}: tool.nvcc-opt must be a table ([tool.nvcc-opt])")


def _defaults(root: Path) -> ProjectConfig:
    trees = find_build_trees(root)
    wanted = root.resolve() / "build"
    if wanted in trees:
        trees = [wanted]
    if len(trees) != 1:
        found = ", ".join(str(t) for t in trees)
        problem = f"several build trees ({found})" if trees else "no CMake build tree"
        raise ConfigError(
            f"{root}: no {CONFIG_NAME} and {problem} (a folder with CMakeCache.txt) under it; "
            "run `nvcc-opt init` (with --build DIR to choose) to write one"
        )
    relative = os.path.relpath(trees[0], root.resolve())
    return _project(Settings(build=BuildConfig(dir=relative)), root, None)


def read_cmake_cache(build_dir: Path) -> dict[str, str]:
    """NAME -> value of the `NAME:TYPE=value` lines of build_dir/CMakeCache.txt."""
    entries: dict[str, str] = {}
    text = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
    for line in text.splitlines():
        if line.startswith(("#", "//")) or "=" not in line:
            continue
        key, _, value = line.partition("=")
        entries[key.partition(":")[0].strip()] = value
    return entries


def find_build_trees(root: Path, depth: int = 2) -> list[Path]:
    """CMake build trees of this project at or under `root` (CMakeCache.txt whose source is
    `root` or below it), sorted; hidden folders and trees inside trees are not searched."""
    base = root.resolve()
    found: list[Path] = []
    _collect(base, base, depth, found)
    return sorted(found)


def _collect(folder: Path, base: Path, depth: int, found: list[Path]) -> None:
    if (folder / "CMakeCache.txt").is_file():
        home = read_cmake_cache(folder).get("CMAKE_HOME_DIRECTORY", "")
        if home and Path(home).resolve().is_relative_to(base):
            found.append(folder)
        if folder != base:
            return
    if depth == 0:
        return
    try:
        children = sorted(p for p in folder.iterdir() if p.is_dir() and not p.is_symlink())
    except OSError:
        return
    for child in children:
        if not child.name.startswith("."):
            _collect(child, base, depth - 1, found)
