"""Private build trees: where candidates are built, never touching the user's source or build.

A `PrivateTree` is a CMake build folder configured from the user's CMakeCache.txt with nvcc-opt as
the CUDA compiler launcher; a `CopiedTree` is a copy of a non-CMake project built with its own
command. A build with a candidate sets NVCC_OPT_CANDIDATE, so the launcher splices the candidate
through the same path as accepted rewrites and fails closed. The candidate is staged at one fixed
path per tree, and when it changes (candidate to candidate, or to and from none) the objects of
the sources concerned are invalidated, so an incremental build recompiles exactly those
translation units and relinks. Several trees (labels) of one project can build side by side;
builds of one tree are serialised by a file lock.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from nvcc_opt import paths
from nvcc_opt.commands import GUARD
from nvcc_opt.launcher import candidate
from nvcc_opt.regions.scan import scan
from nvcc_opt.workspace import cmake_cache
from nvcc_opt.workspace.diagnostics import trim_errors
from nvcc_opt.workspace.runner import Completed, Runner
from nvcc_opt.workspace.unit import objects_of

__all__ = ["BuildResult", "CopiedTree", "PrivateTree", "TreeError", "default_root", "trim_errors"]

STATE = ".nvcc-opt-tree"  # our folder inside a tree: the staged candidate and what was built
OBJECT_SUFFIXES = (".o", ".obj")
COPY_SIZE_CAP = 16 * 1024 * 1024  # bigger files are taken for build outputs and not copied
_LABEL = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def default_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "nvcc-opt" / "trees"


def _tree_path(root: Path | None, owner: Path, label: str) -> Path:
    if not _LABEL.fullmatch(label):
        raise ValueError(f"tree label {label!r}: use letters, digits, '.', '_' and '-'")
    digest = hashlib.sha256(str(owner).encode()).hexdigest()[:12]
    return (root or default_root()) / digest / label


class TreeError(RuntimeError):
    """A tree could not be set up (unreadable cache, failed configure); the message says why."""


@dataclass(frozen=True)
class BuildResult:
    ok: bool
    recompiled: tuple[str, ...]  # objects (re)built, relative to the tree, sorted
    wall_s: float
    errors: str  # trimmed, naming the original files; "" when ok
    completed: Completed  # the build command's full result


@dataclass(frozen=True)
class _Staged:
    path: Path | None  # the value of NVCC_OPT_CANDIDATE, None for a baseline build
    source: Path | None  # the candidate's source file as the user knows it
    region_lines: tuple[int, int] | None  # lines the candidate code occupies in diagnostics


class _Tree:
    def __init__(self, path: Path, runner: Runner) -> None:
        self.path = path
        self.runner = runner

    def _lock(self) -> FileLock:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        return FileLock(str(self.path) + ".lock")

    def _state(self) -> dict[str, Any]:
        try:
            data = json.loads((self.path / STATE / "state.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return {}
        return data if isinstance(data, dict) else {}

    def _save_state(self, **changes: Any) -> None:
        folder = self.path / STATE
        folder.mkdir(parents=True, exist_ok=True)
        temporary = folder / f"state.json.tmp{os.getpid()}"
        temporary.write_text(json.dumps({**self._state(), **changes}), encoding="utf-8")
        os.replace(temporary, folder / "state.json")

    def _in_tree(self, source: Path) -> Path:
        return source

    def _invalidate(self, source: Path) -> None:
        raise NotImplementedError

    def _readable(self, output: str) -> str:
        return output

    def _stage(self, candidate_file: Path | None) -> _Staged:
        """Put the candidate at this tree's fixed path; invalidate objects when it changed."""
        loaded = _load_candidate(candidate_file) if candidate_file else None
        now = None
        if loaded is not None:
            digest = hashlib.sha256(json.dumps(loaded, sort_keys=True).encode()).hexdigest()
            now = {"sha": digest, "file": loaded["file"]}
        before = self._state().get("candidate")
        staged = self.path / STATE / "candidate.json"
        if before != now:
            for changed in {c["file"] for c in (before, now) if isinstance(c, dict)}:
                self._invalidate(Path(changed))
            if loaded is not None:
                staged.parent.mkdir(parents=True, exist_ok=True)
                in_tree = str(self._in_tree(Path(loaded["file"])))
                args = list(loaded["compile_args"])
                candidate.write(str(staged), in_tree, loaded["region_hash"], loaded["code"], args)
            self._save_state(candidate=now)
        if loaded is None:
            return _Staged(None, None, None)
        source = Path(self._readable(loaded["file"]))
        return _Staged(staged, source, _region_lines(source, loaded))

    def _build(
        self, argv: Sequence[str], env: Mapping[str, str], staged: _Staged, timeout_s: float
    ) -> BuildResult:
        if staged.path is not None:
            env = {**env, candidate.ENV: str(staged.path)}
        before = _objects(self.path)
        done = self.runner.run(argv, cwd=self.path, env=env, timeout_s=timeout_s, sandbox=False)
        after = _objects(self.path)
        recompiled = tuple(sorted(k for k, mtime in after.items() if before.get(k) != mtime))
        errors = ""
        if done.timed_out:
            errors = f"build timed out after {timeout_s:g} s and was stopped"
        elif done.exit_status != 0:
            output = self._readable(f"{done.stdout}\n{done.stderr}")
            errors = trim_errors(output, source=staged.source, region_lines=staged.region_lines)
        return BuildResult(done.ok, recompiled, done.wall_s, errors, done)


class PrivateTree(_Tree):
    """A CMake build folder configured like the user's, with nvcc-opt as CUDA launcher."""

    def __init__(self, path: Path, runner: Runner, cmake: str) -> None:
        super().__init__(path, runner)
        self.cmake = cmake

    @classmethod
    def create(
        cls,
        user_build: Path,
        label: str,
        *,
        runner: Runner,
        launcher: str,
        root: Path | None = None,
        timeout_s: float = 600.0,
    ) -> PrivateTree:
        """The tree `label` for `user_build`, configured now unless the user's cache (and the
        launcher) are unchanged since the last configure. Raises TreeError."""
        user_build = Path(os.path.realpath(user_build))
        try:
            text = (user_build / "CMakeCache.txt").read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise TreeError(f"cannot read {user_build / 'CMakeCache.txt'}: {exc.strerror}") from exc
        entries = cmake_cache.parse(text)
        cmake = entries.get("CMAKE_COMMAND")
        tree = cls(_tree_path(root, user_build, label), runner, cmake.value if cmake else "cmake")
        with tree._lock():
            tree._configure(entries, text, launcher, timeout_s)
        return tree

    def _configure(
        self, entries: dict[str, cmake_cache.CacheEntry], text: str, launcher: str, timeout_s: float
    ) -> None:
        fingerprint = hashlib.sha256(f"{text}\0{launcher}".encode()).hexdigest()
        cache = self.path / "CMakeCache.txt"
        if self._state().get("fingerprint") == fingerprint and cache.exists():
            return
        try:
            command = cmake_cache.configure_command(entries, str(self.path), launcher)
        except ValueError as exc:
            raise TreeError(str(exc)) from exc
        if _generator(cache) not in ("", cmake_cache.generator(entries)):
            shutil.rmtree(self.path)  # CMake refuses to switch generators in place
        self.path.mkdir(parents=True, exist_ok=True)
        command[0] = self.cmake
        done = self.runner.run(
            command, cwd=self.path, env=_build_env(), timeout_s=timeout_s, sandbox=False
        )
        if not done.ok:
            why = trim_errors(f"{done.stdout}\n{done.stderr}", source=None, region_lines=None)
            raise TreeError(f"configuring the private tree {self.path} failed:\n{why}")
        self._save_state(fingerprint=fingerprint)

    def build(
        self,
        *,
        candidate_file: Path | None,
        targets: Sequence[str] = (),
        timeout_s: float,
        jobs: int | None = None,
    ) -> BuildResult:
        """`cmake --build` this tree, with the candidate in `candidate_file` (a file written by
        `nvcc_opt.launcher.candidate.write`) or, when None, the baseline."""
        argv = [self.cmake, "--build", str(self.path), "--parallel", str(jobs or _jobs())]
        if targets:
            argv += ["--target", *targets]
        with self._lock():
            staged = self._stage(candidate_file)
            return self._build(argv, _build_env(), staged, timeout_s)

    def _invalidate(self, source: Path) -> None:
        for obj in objects_of(self.path, source):
            obj.unlink(missing_ok=True)


class CopiedTree(_Tree):
    """A copy of a non-CMake project, built with the project's own command inside the copy."""

    def __init__(self, path: Path, runner: Runner, source_root: Path, command: Sequence[str]):
        super().__init__(path, runner)
        self.source_root = source_root
        self.command = tuple(command)

    @classmethod
    def create(
        cls,
        source_root: Path,
        label: str,
        build_command: Sequence[str],
        *,
        runner: Runner,
        root: Path | None = None,
        size_cap: int = COPY_SIZE_CAP,
    ) -> CopiedTree:
        """Copy (or bring up to date) `source_root` into the tree `label`: files new or changed by
        size or time are copied; `.git`, files over `size_cap` and the trees themselves are not."""
        source_root = Path(os.path.realpath(source_root))
        path = _tree_path(root, source_root, label)
        tree = cls(path, runner, source_root, build_command)
        with tree._lock():
            _sync(source_root, path, size_cap)
        return tree

    def build(self, *, candidate_file: Path | None, timeout_s: float) -> BuildResult:
        """Run the build command in the copy. The candidate may name the original source file
        (or its copy); errors name the original files."""
        # The copy's nvcc-opt.toml would resolve a relative store path inside the copy.
        env = {**_build_env(), paths.ENV_STORE: str(paths.store_path(near=self.source_root))}
        with self._lock():
            staged = self._stage(candidate_file)
            return self._build(self.command, env, staged, timeout_s)

    def source_path(self, original: Path) -> Path:
        """Where `original` (a file of the project) is in the copy."""
        return self._in_tree(Path(os.path.realpath(original)))

    def _in_tree(self, source: Path) -> Path:
        if self.source_root in source.parents and self.path not in source.parents:
            return self.path / source.relative_to(self.source_root)
        return source

    def _invalidate(self, source: Path) -> None:
        copy = self._in_tree(source)
        if copy.exists():
            os.utime(copy)  # newer than its objects: any build tool recompiles it

    def _readable(self, output: str) -> str:
        return output.replace(f"{self.path}{os.sep}", f"{self.source_root}{os.sep}")


def _build_env() -> dict[str, str]:
    """This process's environment without a candidate or the launcher's recursion guard, marked
    as a private tree's."""
    kept = {k: v for k, v in os.environ.items() if k not in (candidate.ENV, GUARD)}
    return {**kept, candidate.PRIVATE: "1"}  # the launcher records nothing for private trees


def _generator(cache: Path) -> str:
    try:
        text = cache.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return cmake_cache.generator(cmake_cache.parse(text))


def _jobs() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def _load_candidate(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        return {
            "file": os.path.realpath(str(data["file"])),
            "region_hash": str(data["region_hash"]),
            "code": str(data["code"]),
            "compile_args": [str(a) for a in data.get("compile_args") or []],
        }
    except (OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        raise TreeError(f"candidate file {path}: {exc}") from exc


def _region_lines(source: Path, loaded: Mapping[str, Any]) -> tuple[int, int] | None:
    """The lines diagnostics give the candidate's code: from the region's first line on."""
    try:
        regions = scan(source.read_bytes()).regions
    except OSError:
        return None
    start = next((r.start_line for r in regions if r.text_hash == loaded["region_hash"]), None)
    if start is None:
        return None
    code: str = loaded["code"]
    return start, start + max(len(code.splitlines()), 1) - 1


def _objects(tree: Path) -> dict[str, int]:
    found: dict[str, int] = {}
    for folder, dirs, files in os.walk(tree):
        dirs[:] = [d for d in dirs if d not in (".nvcc-opt", STATE)]
        for name in files:
            if name.endswith(OBJECT_SUFFIXES):
                full = os.path.join(folder, name)
                found[os.path.relpath(full, tree)] = os.stat(full).st_mtime_ns
    return found


def _sync(source: Path, tree: Path, size_cap: int) -> None:
    skip_root = tree.parent.parent  # the trees of this project may live inside it

    def ignore(folder: str, names: list[str]) -> set[str]:
        skipped = {".git", STATE} & set(names)
        for name in names:
            full = Path(folder, name)
            if full == skip_root or (full.is_file() and full.stat().st_size > size_cap):
                skipped.add(name)
        return skipped

    def copy_if_changed(src: str, dst: str) -> str:
        have, want = os.stat(dst) if os.path.exists(dst) else None, os.stat(src)
        if have is None or (have.st_size, have.st_mtime_ns) != (want.st_size, want.st_mtime_ns):
            shutil.copy2(src, dst)
        return dst

    shutil.copytree(source, tree, ignore=ignore, copy_function=copy_if_changed, dirs_exist_ok=True)
