"""A host object's symbols, read from nm (and objdump, for what each refers to): the object
line's view of the original's and the candidate's `.o` (`HostSymbol`, `HostSymbols`), and where
another file of the build defines a symbol (`Elsewhere`).

`host_symbols` parses the tool output; `objects.read_host` runs the tools. Pure: texts in.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from nvcc_opt.verify import host_reach
from nvcc_opt.verify.object_names import normalize

_DATA_CLASSES = frozenset("bBdDgGsSVuCc")
_READ_ONLY_SECTIONS = (".rodata", ".data.rel.ro")
_NM_SYSV = re.compile(r"([^|]*)\|([^|]*)\|\s*(\S)\s*\|\s*(\S*)\|([^|]*)\|[^|]*\|\s*(.*)")


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
