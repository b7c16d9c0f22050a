"""The region's translation unit compiled on its own, exactly as its private tree builds it.

compiler_analysis reads its resource report, PTX and SASS; the verification's object line
(verify/compiled.py) reads its object and PTX. The compile is the tree's own command from
compile_commands.json, through the launcher in candidate mode (the same splice as every build),
writing a private object and keeping nvcc's intermediates. Its copy of the source sits beside
the build's (launcher/copy.BESIDE), so the code cannot tell the two compiles apart by the files
it can look up from where it is compiled.
"""

from __future__ import annotations

import json
import os
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nvcc_opt.commands import GUARD
from nvcc_opt.launcher import candidate, chain
from nvcc_opt.launcher.copy import BESIDE
from nvcc_opt.launcher.option_table import ALL_OPTIONS, Role
from nvcc_opt.workspace.defines import defines
from nvcc_opt.workspace.runner import Runner

_DROPPED = frozenset((Role.OUTPUT, Role.DEPFILE, Role.DEP_MODE, Role.DEP_TARGET) + (Role.DEP_FLAG,))
_OPTIONS = {name: opt for opt in ALL_OPTIONS for name in (opt.long, opt.short) if name}


class UnitError(RuntimeError):
    """The translation unit is not in the tree's compile database, or it does not compile."""


@dataclass(frozen=True)
class Entry:
    """One compile_commands.json entry: its folder, its source's real path, its words."""

    folder: Path
    source: str
    words: list[str]
    output: str | None  # the entry's own "output", where CMake writes one


def read_entries(database: Path) -> list[Entry]:
    """compile_commands.json's entries, in its order. OSError or ValueError when it cannot be
    read; KeyError or TypeError for an entry CMake would not write."""
    found = []
    for entry in json.loads(database.read_text(encoding="utf-8")):
        folder = Path(entry["directory"])
        words = [str(w) for w in entry.get("arguments") or shlex.split(entry["command"])]
        source = os.path.realpath(folder / entry["file"])
        found.append(Entry(folder, source, words, entry.get("output")))
    return found


@dataclass(frozen=True)
class Compiled:
    output: str  # the compiler's stdout and stderr
    obj: Path
    keep: Path  # nvcc's intermediates (PTX, cubins)
    ok: bool = True
    timed_out: bool = False
    defines: Mapping[str, str] = field(default_factory=dict)  # the command's macros (defines.py)


def compile_command(database: Path, source: Path) -> tuple[list[str], Path]:
    """The words and working directory compile_commands.json gives for compiling `source` (its
    first entry)."""
    return compile_commands(database, source)[0]


def compile_commands(database: Path, source: Path) -> list[tuple[list[str], Path]]:
    """Every distinct compile of `source` compile_commands.json lists (a file two targets build
    with different flags has two), in its order; entries that differ only in their output and
    depfile options count once. Raises UnitError when there is none."""
    try:
        entries = read_entries(database)
    except (OSError, ValueError) as exc:
        raise UnitError(f"cannot read the private tree's {database.name} ({exc})") from exc
    wanted = os.path.realpath(source)
    found: list[tuple[list[str], Path]] = []
    seen: set[tuple[str, ...]] = set()
    for entry in entries:
        if entry.source == wanted:
            key = (str(entry.folder), *without_options(entry.words, _DROPPED))
            if key not in seen:
                seen.add(key)
                found.append((entry.words, entry.folder))
    if not found:
        raise UnitError(
            f"the build compiles no {source.name} (not in compile_commands.json): the region "
            "must be in a .cu file of a CMake CUDA target"
        )
    return found


def analysis_command(words: Sequence[str], launcher: str, obj: Path, keep: Path) -> list[str]:
    """The build's compile of one file, through `launcher`, writing `obj` and keeping nvcc's
    intermediates in `keep`, with ptxas' resource report and without depfile options."""
    rest = list(words)
    while rest and chain.is_self(rest[0]):  # compile_commands.json may list the launcher too
        rest = rest[1:]
    kept = without_options(rest, _DROPPED)
    # -Xptxas -v rather than --resource-usage, which shows nothing with -rdc=true.
    report = ["-Xptxas", "-v", "--keep", "--keep-dir", str(keep)]
    return [launcher, *kept, "-o", str(obj), *report]


def without_options(args: Sequence[str], roles: frozenset[str]) -> list[str]:
    """`args` without the nvcc options whose role is in `roles`, and their values."""
    kept: list[str] = []
    i = 0
    while i < len(args):
        name, eq, _ = args[i].partition("=")
        opt = _OPTIONS.get(args[i]) or (_OPTIONS.get(name) if eq else None)
        if opt is not None and opt.role in roles:
            i += 2 if opt.value and not eq else 1
            continue
        kept.append(args[i])
        i += 1
    return kept


def compile_env(staged: Path) -> dict[str, str]:
    """The environment of a compile through the launcher with the candidate file `staged`."""
    kept = {k: v for k, v in os.environ.items() if k not in (candidate.ENV, GUARD, BESIDE)}
    return {**kept, candidate.PRIVATE: "1", candidate.ENV: str(staged)}


def compile_unit(
    runner: Runner,
    tree: Path,
    source: Path,
    region_hash: str,
    code: str,
    compile_args: Sequence[str],
    *,
    launcher: str,
    work: Path,
    timeout_s: float,
    entry: int = 0,
) -> Compiled:
    """Compile `source` as `tree` does (its `entry`-th distinct compile, `compile_commands`)
    with `code` in place of its region into `work` (object `work/region.o`, intermediates in
    `work/keep`). Raises UnitError when the tree's compile database does not list `source`."""
    words, folder = compile_commands(tree / "compile_commands.json", source)[entry]
    keep = work / "keep"
    keep.mkdir(parents=True, exist_ok=True)
    staged = work / "candidate.json"
    candidate.write(str(staged), str(source), region_hash, code, list(compile_args))
    obj = work / "region.o"
    env = compile_env(staged)
    build_output = _output_option(words)
    if build_output is not None:  # the copy beside the build's: names resolve as they do there
        env[BESIDE] = build_output
    done = runner.run(
        analysis_command(words, launcher, obj, keep),
        cwd=folder,
        env=env,
        timeout_s=timeout_s,
        sandbox=False,
    )
    output = f"{done.stdout}\n{done.stderr}"
    return Compiled(output, obj, keep, done.ok, done.timed_out, defines(words, folder))


def object_of(tree: Path, source: Path) -> Path | None:
    """The object `tree`'s build writes for `source` (its `-o`), if the database names one."""
    found = objects_of(tree, source)
    return found[0] if found else None


def objects_of(tree: Path, source: Path) -> list[Path]:
    """Every object `tree`'s build writes for `source`, in compile_commands.json's order (a file
    two targets build has two): each entry's `output`, else its command's -o; none when the
    database cannot be read."""
    try:
        entries = read_entries(tree / "compile_commands.json")
    except (OSError, ValueError):
        return []
    wanted = os.path.realpath(source)
    found: list[Path] = []
    for entry in entries:
        if entry.source != wanted:
            continue
        output = entry.output or _output_option(entry.words)
        if output and entry.folder / output not in found:
            found.append(entry.folder / output)
    return found


def _output_option(words: Sequence[str]) -> str | None:
    """The value of -o / --output-file (-o X, --output-file X, --output-file=X; not -oX, which
    nvcc's -objtemp and -optf would be read as)."""
    for i, word in enumerate(words):
        if word in ("-o", "--output-file") and i + 1 < len(words):
            return words[i + 1]
        if word.startswith("--output-file="):
            return word.partition("=")[2]
    return None
