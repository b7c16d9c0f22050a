"""The object line's host rules: what the candidate's host object defines, calls and keeps that
the original's does not (`host_reasons`), each refused with a reason starting `objects: ` that
names the symbol or function:

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

Pure: `HostSymbols` in (`host_symbols`), reasons out; `objects.object_reasons` runs it with the
device side's rules (`ptx_rules`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from nvcc_opt.verify.host_symbols import Elsewhere, HostSymbol, HostSymbols
from nvcc_opt.verify.object_names import (
    in_library_scope,
    is_mangled,
    may_call,
    nvcc_own,
    replaces_global_operator,
    shown,
)
from nvcc_opt.verify.ptx_facts import PtxFacts
from nvcc_opt.verify.ptx_rules import Demangle

# nvcc's functions that register device variables (the second inlines the first at -O3).
_REGISTRATION = frozenset(
    {"_ZL31__nv_cudaEntityRegisterCallbackPPv", "_ZL24__sti____cudaRegisterAllv"}
)
_MAY_ADD = "a rewrite may add only kernel launches, error checks, math and its kernels' settings"


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
