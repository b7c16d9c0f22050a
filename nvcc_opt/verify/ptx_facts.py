"""What the PTX of a translation unit shows. Pure: texts in.

The PTX is what the compiler made of the device code, after macros, token pasting, templates
and inlining, so its facts do not depend on how the source spelled them:

- device state: `.global` variables (`__device__`, `__managed__`, strings and tables of the math
  library), with the functions that write each one or let its address escape (a store, an
  atomic, a copy into it, its address stored or passed to a function). A variable nobody writes
  and whose address stays in registers that only feed loads is a read-only table.
- external device functions (`.extern .func`): device printf, malloc, assert, launches from the
  device, functions of other files.
- special registers (`%clock64`, `%globaltimer`, `%envreg3`, ...): every `%name` that no `.reg`
  line declares.
- cache policies that outlive a launch (L2 eviction priorities, policies, discards) and sleeps.

A function's facts include those of the functions it calls. What a rewrite may add to them is
`ptx_rules`' to judge; the text is cut into functions and statements by `ptx_text`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace

from nvcc_opt.verify.object_names import normalize
from nvcc_opt.verify.ptx_text import Function, Statement, instruction_of, plain, top_level

POLICY_MODIFIERS = frozenset({"L2::evict_last", "L2::evict_unchanged", "L2::cache_hint"})
POLICY_OPCODES = frozenset({"createpolicy", "applypriority", "discard", "nanosleep"})
# Instructions that write memory at their first [address] operand.
_WRITES = frozenset({"st", "atom", "red", "cp", "multimem", "tensormap", "sust", "sured"})
# Instructions whose destination is a value read from memory, never an address computed here.
_LOADS = frozenset({"ld", "ldu", "atom", "tex", "tld4", "suld", "ldmatrix"})
_EXTERN_FUNCTION = re.compile(r"\.extern\s+\.func\s*(?:\([^)]*\))?\s*([\w$]+)")
_VARIABLE = re.compile(
    r"((?:\.(?:visible|extern|weak|common)\s+)*)\.(global|const)\b(.*)", re.DOTALL
)
_DECLARATOR = re.compile(r"([A-Za-z_$][\w$]*)\s*(?:\[[^\]]*\]\s*)*(?:,|$)")
_WORD = re.compile(r"(?<![\w$%.])[A-Za-z_$][\w$]*")
_REGISTER = re.compile(r"%[\w$]+")
_DECLARED = re.compile(r"(%[\w$]+)(<\d+>)?")


@dataclass(frozen=True)
class DeviceVariable:
    name: str  # as the PTX writes it
    space: str  # "global" or "const"
    extern: bool  # declared here, defined in another file (relocatable device code)
    managed: bool
    writers: frozenset[str] = frozenset()  # functions that write it or let its address escape

    @property
    def read_only(self) -> bool:
        """No device code of this file can change it, and no other file's code knows it."""
        return self.space == "const" or not (self.extern or self.managed or self.writers)


@dataclass(frozen=True)
class PtxFacts:
    """Keys are normalized names (see `object_names.normalize`)."""

    variables: Mapping[str, DeviceVariable] = field(default_factory=dict)
    functions: Mapping[str, str] = field(default_factory=dict)  # normalized -> as written
    externs: Mapping[str, frozenset[str]] = field(default_factory=dict)  # -> functions using it
    special: Mapping[str, frozenset[str]] = field(default_factory=dict)  # register -> functions
    policies: Mapping[str, frozenset[str]] = field(default_factory=dict)  # feature -> functions

    def read_only_variables(self) -> frozenset[str]:
        """Names (as written) of the variables no device code can change."""
        return frozenset(v.name for v in self.variables.values() if v.read_only)


def ptx_facts(ptx: str | Iterable[str]) -> PtxFacts:
    """The facts of one PTX text, or of several (one per GPU architecture) together."""
    texts = [ptx] if isinstance(ptx, str) else list(ptx)
    facts = PtxFacts()
    for text in texts:
        facts = _union(facts, _facts_of(text))
    return facts


def _facts_of(text: str) -> PtxFacts:
    declarations: list[str] = []
    functions: dict[str, Function] = {}
    for declaration, function in top_level(plain(text)):
        if function is not None:
            functions[function.name] = function
        else:
            declarations.append(declaration)
    variables = _variables(declarations)
    externs = {m.group(1) for d in declarations if (m := _EXTERN_FUNCTION.match(d.strip()))}
    declared = _declared_registers(f for fn in functions.values() for f in fn.statements)
    uses: dict[str, dict[str, set[str]]] = {"extern": {}, "special": {}, "policy": {}}
    writers: dict[str, set[str]] = {name: set() for name in variables}
    for function in functions.values():
        _read_function(function, set(functions) | externs, declared, uses, externs)
        for name in _written(function, set(variables), externs):
            writers[name].add(normalize(function.name))
    for declaration in declarations:  # an initializer holding a variable's address
        _, _, value = declaration.partition("=")
        for word in _WORD.findall(value):
            if word in writers:
                writers[word].add("an initializer")
    closure = _closure({name: fn.calls for name, fn in functions.items()})
    return PtxFacts(
        variables={
            normalize(n): DeviceVariable(
                v.name, v.space, v.extern, v.managed, frozenset(writers[n])
            )
            for n, v in variables.items()
        },
        functions={normalize(name): name for name in functions},
        externs=_by_function(uses["extern"], closure),
        special=_by_function(uses["special"], closure),
        policies=_by_function(uses["policy"], closure),
    )


def _union(a: PtxFacts, b: PtxFacts) -> PtxFacts:
    variables = dict(a.variables)
    for name, variable in b.variables.items():
        before = variables.get(name)
        writers = variable.writers | (before.writers if before else frozenset())
        variables[name] = replace(variable, writers=writers)
    return PtxFacts(
        variables,
        {**a.functions, **b.functions},
        _merged(a.externs, b.externs),
        _merged(a.special, b.special),
        _merged(a.policies, b.policies),
    )


def _merged(
    a: Mapping[str, frozenset[str]], b: Mapping[str, frozenset[str]]
) -> dict[str, frozenset[str]]:
    return {k: a.get(k, frozenset()) | b.get(k, frozenset()) for k in {*a, *b}}


def _variables(declarations: Iterable[str]) -> dict[str, DeviceVariable]:
    found: dict[str, DeviceVariable] = {}
    for declaration in declarations:
        match = _VARIABLE.match(declaration.strip())
        if not match:
            continue
        linkage, space, rest = match.groups()
        managed = ".managed" in rest
        before_value = re.sub(r"\.attribute\([^)]*\)", "", rest.partition("=")[0])
        for name in _DECLARATOR.findall(before_value.strip()):
            found[name] = DeviceVariable(name, space, ".extern" in linkage, managed)
    return found


def _declared_registers(statements: Iterable[Statement]) -> tuple[set[str], set[str]]:
    """(names, numbered families) that `.reg` lines declare: `%r<12>` is the family `%r`."""
    names: set[str] = set()
    families: set[str] = set()
    for statement in statements:
        if statement.text.startswith(".reg"):
            for name, count in _DECLARED.findall(statement.text):
                (families if count else names).add(name)
    return names, families


def _is_declared(register: str, declared: tuple[set[str], set[str]]) -> bool:
    names, families = declared
    stem = register.rstrip("0123456789")
    return register in names or (stem != register and stem in families)


def _read_function(
    function: Function,
    callable_names: set[str],
    declared: tuple[set[str], set[str]],
    uses: dict[str, dict[str, set[str]]],
    externs: set[str],
) -> None:
    for statement in function.statements:
        parsed = instruction_of(statement)
        if parsed is None:
            continue
        opcode, operands = parsed
        parts = opcode.split(".")
        for word in _WORD.findall(" ".join(operands)):
            if word in callable_names and word != function.name:
                function.calls.add(word)
                if word in externs:
                    uses["extern"].setdefault(word, set()).add(function.name)
        for register in _REGISTER.findall(" ".join(operands)):
            if not _is_declared(register, declared):
                uses["special"].setdefault(register, set()).add(function.name)
        features = {f".{p}" for p in parts[1:] if p in POLICY_MODIFIERS}
        features |= {parts[0]} & POLICY_OPCODES
        for feature in features:
            uses["policy"].setdefault(feature, set()).add(function.name)


def _written(function: Function, variables: set[str], externs: set[str]) -> set[str]:
    """Variables this function writes or whose address it lets escape (stored, passed on)."""
    callees: dict[int, set[str]] = {}
    parsed = []
    for statement in function.statements:
        instruction = instruction_of(statement)
        if instruction is None:
            continue
        parsed.append((statement.block, *instruction))
        if instruction[0].startswith("call"):
            callee = next((o for o in instruction[1] if not o.startswith("(")), "")
            callees.setdefault(statement.block, set()).add(callee)
    taint: dict[str, set[str]] = {}
    written: set[str] = set()

    def held(text: str) -> set[str]:
        found = {w for w in _WORD.findall(text) if w in variables}
        for register in _REGISTER.findall(text):
            found |= taint.get(register, set())
        return found

    changed = True
    while changed:
        changed = False
        for block, opcode, operands in parsed:
            base = opcode.split(".")[0]
            wrote = base in _WRITES or (base == "wmma" and ".store" in opcode)
            if wrote or base == "call":
                address = next((o for o in operands if o.startswith("[")), None)
                if wrote and address is not None:
                    written |= held(address)
                to_extern = bool(callees.get(block)) and callees[block] <= externs
                for operand in operands:
                    if operand is address or operand.startswith("["):
                        continue
                    if base == "atom" and operand is operands[0]:
                        continue  # the old value it returns
                    if not (to_extern and (opcode.startswith("st.param") or base == "call")):
                        written |= held(operand)
                continue
            if base in _LOADS or not operands or operands[0].startswith("["):
                continue
            sources = set().union(*(held(o) for o in operands[1:] if not o.startswith("[")))
            for register in _REGISTER.findall(operands[0]):
                if not sources <= taint.get(register, set()):
                    taint[register] = taint.get(register, set()) | sources
                    changed = True
    return written


def _closure(calls: Mapping[str, set[str]]) -> dict[str, set[str]]:
    """Function -> itself and every function it calls, directly or not."""
    result: dict[str, set[str]] = {}
    for start in calls:
        seen, stack = {start}, [start]
        while stack:
            for callee in calls.get(stack.pop(), ()):
                if callee not in seen:
                    seen.add(callee)
                    stack.append(callee)
        result[start] = seen
    return result


def _by_function(
    uses: Mapping[str, set[str]], closure: Mapping[str, set[str]]
) -> dict[str, frozenset[str]]:
    """Feature -> the functions (normalized) that use it themselves or through a callee."""
    result: dict[str, frozenset[str]] = {}
    for feature, users in uses.items():
        found = {normalize(f) for f, reached in closure.items() if reached & users}
        result[normalize(feature)] = frozenset(found)
    return result
