"""What each function and datum of a host object refers to, read from objdump. Pure: texts in.

A translation unit's object lists what the whole file calls; a rewrite that calls something the
file already calls elsewhere (a copy `main` makes, nvcc's own `atexit`) adds nothing to that
list. What does change is what the region's functions refer to. Two objdump listings give it:
`objdump -rw` (every relocation, in code and data) and `objdump -drw` (the disassembly, whose
direct calls and jumps to functions of the same section carry no relocation: the assembler
resolved them). A relocation belongs to the defined symbol whose bytes hold it; a target
written as section+offset is the symbol at that place. Following the references from a function
through the object's own functions and data (function pointer tables, vtables) gives everything
it can reach, the same whether the compiler inlined a helper or called it.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

_RECORDS = re.compile(r"RELOCATION RECORDS FOR \[(.+)\]:")
_RECORD = re.compile(r"([0-9a-f]+)\s+(R_\w+)\s+(\S+)")
_SECTION = re.compile(r"Disassembly of section (\S+):")
_FUNCTION = re.compile(r"[0-9a-f]+ <(.+)>:")
_INSTRUCTION = re.compile(r"\s*([0-9a-f]+):\t(.*)")
_INLINE_RELOCATION = re.compile(r"(?:^|\s)([0-9a-f]+): (R_\w+)\s+(\S+)")
_BRANCH = re.compile(r"(?:call|jmp|j[a-z]{1,3}|bl?)q?\s+([0-9a-f]+) <")
_TARGET = re.compile(r"(.+?)(?:([+-])0x([0-9a-f]+))?")
# x86-64 PC-relative relocations: the CPU adds the field to the address of the next instruction,
# so the target is S + A + (end of instruction - place of the field). Others hold S + A.
_PC_RELATIVE = re.compile(r"R_X86_64_(PC32|PLT32|PC64|GOTPCREL\w*|REX_GOTPCRELX|GOTPC32)")


@dataclass(frozen=True)
class Placed:
    """A defined symbol's bytes: where `name` (normalized) lies in its section."""

    name: str
    section: str
    start: int
    size: int


class _Places:
    """Finds the symbol that holds an offset of a section."""

    def __init__(self, placed: Iterable[Placed]) -> None:
        by_section: dict[str, list[Placed]] = {}
        for p in placed:
            by_section.setdefault(p.section, []).append(p)
        self._symbols = {s: sorted(ps, key=lambda p: p.start) for s, ps in by_section.items()}
        self._starts = {s: [p.start for p in ps] for s, ps in self._symbols.items()}
        self.sections = frozenset(self._symbols)

    def holding(self, section: str, offset: int) -> str | None:
        """The symbol whose bytes hold `offset`; a label without size holds only its start."""
        symbols = self._symbols.get(section, [])
        i = bisect_right(self._starts.get(section, []), offset) - 1
        for candidate in reversed(symbols[max(i - 8, 0) : i + 1]):  # aliases share a start
            if candidate.start <= offset < candidate.start + max(candidate.size, 1):
                return candidate.name
        return None

    def starting(self, section: str, offset: int) -> str | None:
        """A symbol of `section` starting at `offset`."""
        symbols = self._symbols.get(section, [])
        i = bisect_right(self._starts.get(section, []), offset) - 1
        return symbols[i].name if i >= 0 and symbols[i].start == offset else None


def references(
    relocations: str, disassembly: str, placed: Iterable[Placed], names: Mapping[str, str]
) -> dict[str, frozenset[str]]:
    """Defined symbol -> the symbols (normalized, defined or not) it refers to directly, from
    `objdump -rw` and `objdump -drw` of one object. `names`: every symbol nm lists (defined or
    not), as spelled -> normalized; a relocation naming anything else names a section."""
    places = _Places(placed)
    edges: dict[str, set[str]] = {}
    code = set()
    for owner, reference, section in _code_references(disassembly, places, names):
        code.add(section)
        if reference is not None and reference != owner:
            edges.setdefault(owner, set()).add(reference)
    for section, offset, kind, value in _records(relocations):
        if section in code:  # read from the disassembly, where the instruction ends are known
            continue
        holder = places.holding(section, offset)
        target = _target(kind, value, 0, places, names)
        if holder is not None and target is not None and target != holder:
            edges.setdefault(holder, set()).add(target)
    return {name: frozenset(found) for name, found in edges.items()}


def _records(relocations: str) -> Iterable[tuple[str, int, str, str]]:
    section = ""
    for line in relocations.splitlines():
        if header := _RECORDS.fullmatch(line.strip()):
            section = header.group(1)
        elif record := _RECORD.fullmatch(line.strip()):
            yield section, int(record.group(1), 16), record.group(2), record.group(3)


def _target(
    kind: str, value: str, to_end: int, places: _Places, names: Mapping[str, str]
) -> str | None:
    """What a relocation refers to; `to_end`: bytes from its field to the instruction's end."""
    match = _TARGET.fullmatch(value)
    if not match:
        return None
    name, sign, digits = match.groups()
    if name in names:
        return names[name]
    if name not in places.sections:  # a section without symbols: unnamed constants
        return None
    addend = int(digits or "0", 16) * (-1 if sign == "-" else 1)
    if _PC_RELATIVE.fullmatch(kind):
        addend += to_end or 4
    return places.holding(name, addend)


@dataclass
class _Instruction:
    address: int
    text: str
    relocations: list[tuple[int, str, str]]


def _code_references(
    disassembly: str, places: _Places, names: Mapping[str, str]
) -> Iterable[tuple[str, str | None, str]]:
    """(function, what it refers to, section) for every relocation in code and every direct
    branch to another function that the assembler resolved (no relocation)."""
    for section, function, body in _functions(disassembly, names):
        for i, instruction in enumerate(body):
            end = body[i + 1].address if i + 1 < len(body) else None
            for offset, kind, value in instruction.relocations:
                to_end = end - offset if end is not None else 0
                yield function, _target(kind, value, to_end, places, names), section
            branch = _BRANCH.match(instruction.text)
            if branch and not instruction.relocations:
                yield function, places.starting(section, int(branch.group(1), 16)), section


def _relocations(found: Iterable[re.Match[str]]) -> list[tuple[int, str, str]]:
    return [(int(r.group(1), 16), r.group(2), r.group(3)) for r in found]


def _functions(
    disassembly: str, names: Mapping[str, str]
) -> Iterable[tuple[str, str, list[_Instruction]]]:
    section, function = "", ""
    body: list[_Instruction] = []
    for line in disassembly.splitlines():
        stripped = line.strip()
        start = _SECTION.fullmatch(stripped)
        header = _FUNCTION.fullmatch(stripped)
        if start or header:
            if function:
                yield section, function, body
            function, body = (names.get(header.group(1), ""), []) if header else ("", [])
            section = start.group(1) if start else section
            continue
        if own_line := _INLINE_RELOCATION.fullmatch(stripped):  # without -w, or a second one
            if body:
                body[-1].relocations += _relocations([own_line])
        elif instruction := _INSTRUCTION.fullmatch(line):
            text = instruction.group(2)
            inline = list(_INLINE_RELOCATION.finditer(text))
            if inline:
                text = text[: inline[0].start()]
            body.append(_Instruction(int(instruction.group(1), 16), text, _relocations(inline)))
    if function:
        yield section, function, body


def reach(edges: Mapping[str, frozenset[str]], defined: Iterable[str]) -> dict[str, frozenset[str]]:
    """Defined symbol -> every undefined symbol it can reach through the object's own symbols."""
    known = set(defined)
    memo: dict[str, frozenset[str]] = {}
    for start in known:
        seen, stack, found = {start}, [start], set()
        while stack:
            for target in edges.get(stack.pop(), ()):
                if target not in known:
                    found.add(target)
                elif target not in seen:
                    seen.add(target)
                    stack.append(target)
        memo[start] = frozenset(found)
    return memo
