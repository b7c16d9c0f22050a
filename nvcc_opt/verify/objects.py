"""The object line: what the candidate's compiled translation unit defines, calls and keeps.

Static checks on source text can be fooled (macros, token pasting, templates, function pointers);
the compiled objects cannot. The host object (`.o`) of the region's translation unit, built with
the original region and with the candidate, is read with nm and objdump; the PTX of the same
compile with `ptx_rules`. Anything the candidate's side shows that the original's does not, and
that can change results, timing or the rest of the program, is refused with a reason starting
`objects: ` (host) or `ptx: ` (device) that names the symbol or function:

- H1 replacing the program's own functions: a new global definition must be a C++-mangled name
  that nothing else in the build defines. C-linkage names (they interpose the C library and the
  program), global operator new/delete and strong definitions in the C++ or CUDA libraries'
  namespaces are refused outright; weak instantiations of those libraries are shared code. A
  weak definition that another file defines weakly too (an inline function of a shared header)
  must have the same size there.
- H2 calling what the original does not: an undefined symbol new to the file must be on
  `object_names.may_call`'s allowlist. So must one a function of the original newly reaches
  (itself or through the object's functions and tables, `host_reach`): that catches a call the
  file already makes elsewhere (a copy in `main`, nvcc's own `atexit`) once the region makes it.
- H3 state: a new writable datum (local or global: a static local, its guard, a namespace-scope
  variable) is refused, except nvcc's kernel-stub statics and the host copy of a device variable
  the PTX shows no device code can change (a `__constant__` table, a read-only table) that no
  host code but nvcc's registration touches. So is writable data the file already has that a
  function of the original newly reaches (a counter outside the region).

Pure functions over tool output (`host_symbols`, `host_reasons`; `ptx_rules.ptx_facts`,
`ptx_reasons`) and thin ones that run the tools through a `Runner` (`read_host`,
`defined_elsewhere`, `demangler`, `object_reasons`).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from nvcc_opt.verify import host_reach
from nvcc_opt.verify.object_names import (
    in_library_scope,
    is_mangled,
    may_call,
    normalize,
    nvcc_own,
    replaces_global_operator,
    shown,
)
from nvcc_opt.verify.ptx_rules import Demangle, PtxFacts, ptx_facts, ptx_reasons
from nvcc_opt.workspace.runner import Runner

__all__ = [
    "Elsewhere",
    "HostSymbol",
    "HostSymbols",
    "ObjectsError",
    "PtxFacts",
    "defined_elsewhere",
    "demangler",
    "host_reasons",
    "host_symbols",
    "linkable_files",
    "object_reasons",
    "ptx_facts",
    "ptx_reasons",
    "ptx_texts",
    "read_host",
]

TOOL_TIMEOUT_S = 120.0
_OUTPUT_CAP = 64 * 1024 * 1024  # nm of a big archive; the listing must not be cut
_DATA_CLASSES = frozenset("bBdDgGsSVuCc")
_READ_ONLY_SECTIONS = (".rodata", ".data.rel.ro")
# nvcc's functions that register device variables (the second inlines the first at -O3).
_REGISTRATION = frozenset(
    {"_ZL31__nv_cudaEntityRegisterCallbackPPv", "_ZL24__sti____cudaRegisterAllv"}
)
_MAY_ADD = "a rewrite may add only kernel launches, error checks, math and its kernels' settings"
_NM_SYSV = re.compile(r"([^|]*)\|([^|]*)\|\s*(\S)\s*\|\s*(\S*)\|([^|]*)\|[^|]*\|\s*(.*)")
_NM_POSIX = re.compile(r"(.*): (\S+) (\S)(?: ([0-9a-f]*))?(?: ([0-9a-f]*))?\s*")
_ARCHIVE_MEMBER = re.compile(r"(.*)\[(.*)\]")


class ObjectsError(RuntimeError):
    """A tool could not read an object; the message names the file and the tool's error."""


@dataclass(frozen=True)
class HostSymbol:
    raw: str  # as the object spells it
    letter: str  # nm's class: T t D d B b R r W V u ...
    section: str
    value: int
    size: int
    function: bool

    @property
    def is_global(self) -> bool:
        return self.letter.isupper() or self.letter in "ui"

    @property
    def weak(self) -> bool:
        return self.letter in "WVu"

    @property
    def writable(self) -> bool:
        """nm's data classes, less read-only sections (relocated tables, vtables, typeinfo)."""
        if self.function or self.section.startswith(_READ_ONLY_SECTIONS):
            return False
        return self.letter in _DATA_CLASSES


@dataclass(frozen=True)
class HostSymbols:
    """A host object's symbols by normalized name (`object_names.normalize`)."""

    defined: Mapping[str, HostSymbol]
    undefined: Mapping[str, str]  # normalized -> as spelled
    # Defined symbol -> what it refers to directly; None when the object was not disassembled.
    edges: Mapping[str, frozenset[str]] | None = None

    def functions(self) -> frozenset[str]:
        return frozenset(n for n, s in self.defined.items() if s.function)

    def reach(self) -> dict[str, frozenset[str]]:
        return host_reach.reach(self.edges or {}, self.defined)

    def referrers(self, name: str) -> frozenset[str]:
        return frozenset(o for o, targets in (self.edges or {}).items() if name in targets)


@dataclass(frozen=True)
class Elsewhere:
    """Where another file of the build defines a symbol."""

    where: str  # `path` or `archive[member]`
    weak: bool
    size: int | None  # None: nm gave none

    def __str__(self) -> str:
        return self.where


def host_symbols(nm_sysv: str, relocations: str = "", disassembly: str = "") -> HostSymbols:
    """The symbols of `nm -f sysv OBJECT`; with `objdump -rw` and `objdump -drw --no-show-raw-insn`
    of the same object, also what each defined symbol refers to."""
    defined: dict[str, HostSymbol] = {}
    undefined: dict[str, str] = {}
    for line in nm_sysv.splitlines():
        match = _NM_SYSV.fullmatch(line.strip())
        if not match or match.group(1).strip() == "Name":
            continue
        raw, value, letter, kind, size, section = (g.strip() for g in match.groups())
        name = normalize(raw)
        if letter in "Uvw" or section == "*UND*":
            undefined[name] = raw
            continue
        if letter in "aNn" or not raw:  # absolute, debugging
            continue
        defined[name] = HostSymbol(
            raw,
            letter,
            section,
            int(value or "0", 16),
            int(size or "0", 16),
            kind == "FUNC" or letter in "Tti",
        )
    edges = None
    if relocations or disassembly:
        placed = [host_reach.Placed(n, s.section, s.value, s.size) for n, s in defined.items()]
        names = {s.raw: n for n, s in defined.items()} | {raw: n for n, raw in undefined.items()}
        edges = host_reach.references(relocations, disassembly, placed, names)
    return HostSymbols(defined, undefined, edges)


@dataclass
class _Findings:
    items: list[tuple[str, list[str]]] = field(default_factory=list)  # (text with {i}, names)

    def add(self, text: str, *names: str) -> None:
        self.items.append((text, list(names)))

    def render(self, demangle: Demangle | None) -> list[str]:
        names = {n for _, ns in self.items for n in ns}
        readable = dict(demangle(names)) if demangle and names else {}
        return [text.format(*(shown(n, readable) for n in ns)) for text, ns in self.items]


def host_reasons(
    original: HostSymbols,
    candidate: HostSymbols,
    elsewhere: Mapping[str, Elsewhere],
    *,
    device: PtxFacts | None = None,
    demangle: Demangle | None = None,
) -> list[str]:
    """H1, H2 and H3 (see the module docstring). `elsewhere`: what the rest of the build defines
    (`defined_elsewhere`, keyed by the name as spelled); `device`: the candidate's PTX facts,
    whose read-only variables' host copies are allowed; `demangle` names symbols in reasons.
    The per-function rules and the host-copy exception need both objects disassembled
    (`read_host`); without that they are skipped and every new datum is refused."""
    findings = _Findings()
    functions = candidate.functions()
    read_only = {_variable_name(n) for n in (device.read_only_variables() if device else ())}
    for name, symbol in sorted(candidate.defined.items()):
        if name in original.defined or nvcc_own(name, functions):
            continue
        users = _device_copy_users(name, symbol, candidate, read_only)
        # Under relocatable device code a device variable's host copy is a global name of its
        # own; untouched and defined nowhere else, it replaces nothing.
        if symbol.is_global and not (users == [] and symbol.raw not in elsewhere):
            _replacing(symbol, elsewhere.get(symbol.raw), findings)
        if symbol.writable:
            _state(symbol, users, candidate, findings)
    new_calls = [n for n in candidate.undefined if n not in original.undefined and not may_call(n)]
    for name in sorted(new_calls):
        raw_name = candidate.undefined[name]
        findings.add(f"objects: uses {{0}}, which the original does not: {_MAY_ADD}", raw_name)
    if original.edges is not None and candidate.edges is not None:
        _newly_reached(original, candidate, set(new_calls), findings)
    return findings.render(demangle)


def _replacing(symbol: HostSymbol, other: Elsewhere | None, findings: _Findings) -> None:
    """H1: a new global definition."""
    if not is_mangled(symbol.raw):
        findings.add(
            "objects: defines {0} with C linkage: it can take the place of a C library or "
            "program function of that name",
            symbol.raw,
        )
    elif replaces_global_operator(symbol.raw):
        findings.add(
            "objects: defines {0}, which replaces the program's allocator everywhere", symbol.raw
        )
    elif in_library_scope(symbol.raw):
        if not symbol.weak:
            findings.add(
                "objects: defines {0} in a namespace of the C++ or CUDA libraries: it can "
                "take the place of the library's own",
                symbol.raw,
            )
    elif other is not None and not (
        symbol.weak and other.weak and other.size in (None, symbol.size)
    ):
        findings.add(
            f"objects: defines {{0}}, which {other.where} defines too: the linker keeps one of "
            "them for the whole program",
            symbol.raw,
        )


def _device_copy_users(
    name: str, symbol: HostSymbol, candidate: HostSymbols, read_only: set[str]
) -> list[str] | None:
    """For the host copy of a device variable no device code can change: the host functions
    that use it besides nvcc's registration (names as spelled). None for any other symbol, or
    when the object was not disassembled (nothing known about its users)."""
    if candidate.edges is None or _variable_name(symbol.raw) not in read_only:
        return None
    users = sorted(candidate.referrers(name) - _REGISTRATION)
    return [candidate.defined[u].raw if u in candidate.defined else u for u in users]


def _state(
    symbol: HostSymbol, users: list[str] | None, candidate: HostSymbols, findings: _Findings
) -> None:
    """H3: a new writable datum, unless it is the untouched host copy of a read-only device
    variable (`users`: see `_device_copy_users`)."""
    if users == []:
        return
    if users:
        listed = ", ".join(f"{{{i + 1}}}" for i in range(len(users[:3])))
        findings.add(
            f"objects: host code ({listed}) uses {{0}}, the host copy of a device variable: "
            "only nvcc's registration may",
            symbol.raw,
            *users[:3],
        )
        return
    findings.add(
        "objects: keeps writable data {0} that the original does not: state kept across calls",
        symbol.raw,
    )


def _newly_reached(
    original: HostSymbols, candidate: HostSymbols, new_to_file: set[str], findings: _Findings
) -> None:
    """H2 and H3 per function: what a function the original has now uses (directly or through
    the object's own functions and tables) that it did not: a symbol the file already
    references elsewhere, off the allowlist, or writable data the file already has. A new
    function that none of those reaches (an entry point) is compared with nothing."""
    common = candidate.functions() & original.functions()
    reachable = {t for f in common for t in _defined_closure(candidate, f)}
    starts = common | {f for f in candidate.functions() - common if f not in reachable}
    before, now = original.reach(), candidate.reach()
    by_target: dict[str, set[str]] = {}
    for function in starts:
        added = (now.get(function, frozenset()) | _file_data(candidate, function, original)) - (
            before.get(function, frozenset()) | _file_data(original, function, original)
            if function in common
            else set()
        )
        for target in added:
            if target in candidate.defined or not (may_call(target) or target in new_to_file):
                by_target.setdefault(target, set()).add(function)
    for target, functions in sorted(by_target.items()):
        raw = [candidate.defined[f].raw for f in sorted(functions)[:3]]
        listed = ", ".join(f"{{{i + 1}}}" for i in range(len(raw)))
        one = len(raw) == 1
        what, why = ("writable data {0} of the file", "state kept across calls")
        if target not in candidate.defined:
            what, why = "{0}", _MAY_ADD
        findings.add(
            f"objects: {listed} now {'uses' if one else 'use'} {what} (directly or through the "
            f"functions and tables {'it reaches' if one else 'they reach'}), which the "
            f"original's did not: {why}",
            candidate.defined[target].raw
            if target in candidate.defined
            else candidate.undefined.get(target, target),
            *raw,
        )


def _file_data(symbols: HostSymbols, function: str, original: HostSymbols) -> set[str]:
    """The writable data of the original's file (not nvcc's) that `function` reaches."""
    own = symbols.functions()
    return {
        d
        for d in _defined_closure(symbols, function)
        if d in original.defined and symbols.defined[d].writable and not nvcc_own(d, own)
    }


def _defined_closure(symbols: HostSymbols, start: str) -> set[str]:
    """The object's own symbols `start` refers to, directly or not (itself excluded)."""
    edges = symbols.edges or {}
    seen: set[str] = set()
    stack = [start]
    while stack:
        for target in edges.get(stack.pop(), ()):
            if target in symbols.defined and target not in seen:
                seen.add(target)
                stack.append(target)
    return seen


def _variable_name(name: str) -> str:
    """A variable's qualified name from its mangled name, without the internal-linkage marker or
    nvcc's per-file `_INTERNAL_` namespace, so a host copy (`_ZN2nsL1tE`) and its PTX variable
    (`_ZN2ns1tE`, `_ZN35_INTERNAL_..2ns1tE`) compare equal: `ns::t`. Unmangled names are kept."""
    if not name.startswith("_Z"):
        return name
    rest = name[2:].removeprefix("L")
    nested = rest.startswith("N")
    parts: list[str] = []
    i = 1 if nested else 0
    while i < len(rest):
        if rest[i] == "L":
            i += 1
        number = re.match(r"\d+", rest[i:])
        if not number:
            break
        start = i + number.end()
        parts.append(rest[start : start + int(number.group())])
        i = start + int(number.group())
        if not nested:
            break
    if not parts or rest[i:] != ("E" if nested else ""):
        return name
    kept = [p for p in parts if not p.startswith("_INTERNAL_")]
    return "::".join("(anonymous namespace)" if p.startswith("_GLOBAL__N") else p for p in kept)


# --- running the tools --------------------------------------------------------------------------


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
