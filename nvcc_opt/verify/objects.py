"""The object line: what the candidate's compiled translation unit defines, calls and keeps.

Static checks on source text can be fooled (macros, token pasting, templates, function pointers);
the compiled objects cannot. The host object (`.o`) of the region's translation unit, built with
the original region and with the candidate, is read with nm and objdump; the PTX of the same
compile with `ptx_rules`. Anything the candidate's side shows that the original's does not, and
that can change results, timing or the rest of the program, is refused with a reason starting
`objects: ` (host) or `ptx: ` (device) that names the symbol or function. The host rules (H1
new global definitions unique program-wide, H2 new calls and their reach on an allowlist, H3 no
new writable data) are in `host_rules.py`, the device rules in `ptx_rules.py`.

This module runs the tools through a `Runner` and hands their output to the pure parts
(`host_symbols.host_symbols`, `host_rules.host_reasons`; `ptx_facts.ptx_facts`, `ptx_reasons`):
`read_host`, `defined_elsewhere`, `linkable_files`, `demangler`, `ptx_texts`, `object_reasons`.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Collection, Iterable, Mapping, Sequence
from pathlib import Path

from nvcc_opt.verify.host_rules import host_reasons
from nvcc_opt.verify.host_symbols import Elsewhere, HostSymbols, host_symbols
from nvcc_opt.verify.ptx_facts import ptx_facts
from nvcc_opt.verify.ptx_rules import Demangle, ptx_reasons
from nvcc_opt.workspace.runner import Runner

__all__ = [
    "ObjectsError",
    "defined_elsewhere",
    "demangler",
    "linkable_files",
    "object_reasons",
    "ptx_texts",
    "read_host",
]

TOOL_TIMEOUT_S = 120.0
_OUTPUT_CAP = 64 * 1024 * 1024  # nm of a big archive; the listing must not be cut
_NM_POSIX = re.compile(r"(.*): (\S+) (\S)(?: ([0-9a-f]*))?(?: ([0-9a-f]*))?\s*")
_ARCHIVE_MEMBER = re.compile(r"(.*)\[(.*)\]")


class ObjectsError(RuntimeError):
    """A tool could not read an object; the message names the file and the tool's error."""


def read_host(path: Path, runner: Runner) -> HostSymbols:
    """`host_symbols` of one object: nm, objdump -rw and objdump -drw."""
    outputs = [
        _tool(runner, ["nm", "-f", "sysv", str(path)], path),
        _tool(runner, ["objdump", "-rw", str(path)], path),
        _tool(runner, ["objdump", "-drw", "--no-show-raw-insn", str(path)], path),
    ]
    return host_symbols(*outputs)


def defined_elsewhere(
    paths: Sequence[Path], runner: Runner, exclude: Collection[Path] = ()
) -> dict[str, Elsewhere]:
    """Global symbol (as spelled) -> where one of `paths` (objects, archives, shared libraries)
    defines it: one `nm -A` for the objects and archives (members named), one `nm -A -D` for the
    shared libraries. `exclude`: objects to leave out, also as archive members of their name."""
    skipped = {os.path.realpath(p) for p in exclude}
    members = {p.name for p in exclude}
    kept = [p for p in paths if os.path.realpath(p) not in skipped]
    shared = [p for p in kept if _is_shared_library(p)]
    static = [p for p in kept if not _is_shared_library(p)]
    found: dict[str, Elsewhere] = {}
    for group, dynamic in ((static, []), (shared, ["-D"])):
        if not group:
            continue
        argv = ["nm", "-A", "-P", "--defined-only", *dynamic, *map(str, group)]
        output = _tool(runner, argv, group[0], allow_missing_symbols=True)
        for where, name, letter, size in _posix_lines(output):
            if not (letter.isupper() or letter in "ui") or letter == "U":
                continue
            member = _ARCHIVE_MEMBER.fullmatch(where)
            if member and member.group(2) in members:
                continue
            weak = letter in "WVu"
            if name not in found or (found[name].weak and not weak):
                found[name] = Elsewhere(where, weak, int(size, 16) if size else None)
    return found


def linkable_files(folder: Path) -> list[Path]:
    """The objects, archives and shared libraries under a build folder, without CMake's
    compiler-identification objects and nvcc-opt's own folders."""
    found: list[Path] = []
    for root, folders, files in os.walk(folder):
        folders[:] = [
            f for f in folders if not f.startswith(".nvcc-opt") and not _compiler_id(root, f)
        ]
        for name in files:
            path = Path(root) / name
            if name.endswith((".o", ".obj", ".a")) or _is_shared_library(path):
                found.append(path)
    return sorted(found)


def demangler(runner: Runner, cwd: Path) -> Demangle:
    """Names -> how C++ spells them, with one c++filt run; names unchanged without c++filt."""

    def demangle(names: Collection[str]) -> Mapping[str, str]:
        listed = sorted(names)
        if not listed or shutil.which("c++filt") is None:
            return {}
        done = runner.run(["c++filt", *listed], cwd=cwd, timeout_s=TOOL_TIMEOUT_S, sandbox=False)
        lines = done.stdout.splitlines()
        return (
            dict(zip(listed, lines, strict=True)) if done.ok and len(lines) == len(listed) else {}
        )

    return demangle


def ptx_texts(folder: Path) -> list[str]:
    """The PTX files nvcc's `--keep --keep-dir folder` left (one per virtual architecture)."""
    return [p.read_text(encoding="utf-8", errors="replace") for p in sorted(folder.glob("*.ptx"))]


def object_reasons(
    original_object: Path,
    candidate_object: Path,
    original_ptx: Iterable[str],
    candidate_ptx: Iterable[str],
    elsewhere: Mapping[str, Elsewhere],
    runner: Runner,
) -> list[str]:
    """Every host and device reason for one translation unit (empty: nothing refused)."""
    demangle = demangler(runner, candidate_object.parent)
    before, after = ptx_facts(list(original_ptx)), ptx_facts(list(candidate_ptx))
    host = host_reasons(
        read_host(original_object, runner),
        read_host(candidate_object, runner),
        elsewhere,
        device=after,
        demangle=demangle,
    )
    return host + ptx_reasons(before, after, demangle)


def _tool(
    runner: Runner, argv: list[str], path: Path, *, allow_missing_symbols: bool = False
) -> str:
    done = runner.run(
        argv, cwd=path.parent, timeout_s=TOOL_TIMEOUT_S, sandbox=False, output_cap=_OUTPUT_CAP
    )
    # nm exits 1 when one of its files is not an object (a linker script named lib*.so) and
    # still lists the others.
    tolerated = allow_missing_symbols and done.exit_status == 1 and not done.timed_out
    if not done.ok and not tolerated:
        message = (done.stderr or done.note or f"exit status {done.exit_status}").strip()
        raise ObjectsError(f"{path}: {argv[0]} failed: {message.splitlines()[0][:300]}")
    return done.stdout


def _posix_lines(output: str) -> Iterable[tuple[str, str, str, str]]:
    for line in output.splitlines():
        match = _NM_POSIX.fullmatch(line)
        if match:
            where, name, letter, _, size = match.groups()
            yield where, name, letter, size or ""


def _is_shared_library(path: Path) -> bool:
    return path.name.endswith(".so") or ".so." in path.name


def _compiler_id(root: str, folder: str) -> bool:
    """CMakeFiles/<version>/: CMake's compiler-identification builds."""
    return os.path.basename(root) == "CMakeFiles" and re.match(r"\d+\.\d+", folder) is not None
