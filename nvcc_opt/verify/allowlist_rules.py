"""The allowlist's six rules (see `allowlist.py`) applied to one side of the candidate: `Rules`
yields a reason and a line for each definition, piece of state, call or name, attribute or
pragma, host asm and launch stream that is neither on the lists (`allowlist_lists`) nor the
original's (`allowlist_reference`), reading declarations from the symbol table.
"""

from __future__ import annotations

from collections.abc import Iterable

from nvcc_opt.verify.allowlist_lists import (
    ALLOWED_ATTRIBUTES,
    ALLOWED_PRAGMAS,
    BUILTINS,
    CUDA_BUILTINS,
    PRIMITIVE,
    PURE_STD,
    PURE_TOOLKIT,
    REFUSED_TOOLKIT,
    RUNTIME_CALLS,
    STREAMS,
    TIMER_PARTS,
)
from nvcc_opt.verify.allowlist_reference import Reference, unqualified
from nvcc_opt.verify.region_code import RegionCode
from nvcc_opt.verify.region_definitions import Variable
from nvcc_opt.verify.region_exports import (
    ARITHMETIC,
    Export,
    builtin_vector,
    exports,
    first_use_outside,
)
from nvcc_opt.verify.region_uses import Use
from nvcc_opt.verify.symbols import (
    FUNCTION,
    PROJECT,
    SYSTEM,
    TOOLKIT,
    TYPE,
    VARIABLE,
    Decl,
    Symbols,
)


def _plain_type(text: str) -> str:
    """`const std::basic_ofstream<char>` -> `std::basic_ofstream`; '' for pointers and such."""
    if any(c in text for c in "*&(["):
        return ""
    words = [
        w for w in text.split() if w not in ("const", "volatile", "struct", "class", "typename")
    ]
    depth = 0
    out = []
    for char in " ".join(words):
        depth += (char == "<") - (char == ">")
        if depth == 0 and char not in "<> ":
            out.append(char)
    return "".join(out)


class Rules:
    """The six rules applied to one side of the candidate."""

    def __init__(
        self, code: RegionCode, reference: Reference, table: Symbols, rdc: bool, *, host: bool
    ) -> None:
        self.code = code
        self.reference = reference
        self.table = table
        self.rdc = rdc
        self.host = host

    def reasons(self) -> Iterable[tuple[str, int]]:
        yield from self._definitions()
        yield from self._exports()
        yield from self._state()
        for use in self.code.uses:
            reason = self._use_reason(use)
            if reason:
                yield reason, use.line
        yield from self._attributes()
        yield from self._asm()
        yield from self._streams()

    # -- 1. definitions -----------------------------------------------------------------------

    def _definitions(self) -> Iterable[tuple[str, int]]:
        ref = self.reference
        for name, line in self.code.namespaces:
            if name not in ref.namespaces:
                yield f"opens namespace {name}, which the original does not open", line
        for d in self.code.definitions:
            if d.qualified in ref.functions:
                continue
            if d.foreign:
                yield f"defines {d.name}, a name it does not own", d.line
            elif d.extern_c:
                yield f'defines a new extern "C" function {d.name}', d.line
            elif self.rdc and d.attrs & {"device", "global"} and not d.internal:
                yield (
                    f"defines a new device function {d.name} with external linkage under "
                    "relocatable device code (make it static)",
                    d.line,
                )

    def _exports(self) -> Iterable[tuple[str, int]]:
        """A name the candidate declares at namespace scope that is new against the original
        (`_new`: a new name, another overload or specialization, a definition of what the
        original only declared) must be one the code outside the region never uses: otherwise
        it could change what that code calls or names. Functions and specializations reach all
        of the unit (overloads, argument-dependent lookup and instantiation at its end); other
        names only the code after the region. Operators: `_operator_reason`."""
        ref = self.reference
        by_name: dict[str, list[Export]] = {}
        for e in exports(self.code):
            by_name.setdefault(e.name, []).append(e)
        fresh = {
            name
            for name, items in by_name.items()
            if any(e.kind == "class" for e in items) and name not in ref.outside
        }
        for name, items in by_name.items():
            first = items[0]
            if first.kind == "using namespace":
                if name not in ref.declared:
                    yield (
                        f"`{name}` at namespace scope, which the original does not have: it "
                        "changes name lookup in the code after the region",
                        first.line,
                    )
                continue
            if not self._new(name, items):
                continue
            if name.startswith("operator"):
                reason = self._operator_reason(name, items, fresh)
                if reason:
                    yield reason, first.line
                continue
            everywhere = any(e.kind in ("function", "specialization", "using") for e in items)
            if name in (ref.outside if everywhere else ref.after):
                where = first_use_outside(self.code.side, name, after_only=not everywhere)
                yield (
                    f"declares {first.kind} {name}, a name the code outside the region also "
                    f"uses{f' ({where})' if where else ''}: a new declaration of it could "
                    "change what that code calls or names; give it a name of its own",
                    first.line,
                )

    def _new(self, name: str, items: list[Export]) -> bool:
        """Whether the candidate's declarations of `name` add to the original's: for a name the
        original defines, more distinct declarations (a prototype and its definition count
        once; specializations of the region's own template do not count); for any other name,
        a declaration the original lacks, or a definition."""
        ref = self.reference
        keys = {e.key for e in items}
        theirs = ref.declared.get(name, frozenset())
        if name in ref.defined:
            if any(e.kind == "function" and e.defined for e in items):
                keys = {k for k in keys if k[0] != "specialization"}
                theirs = frozenset(k for k in theirs if k[0] != "specialization")
            return len(keys) > len(theirs)
        return bool(keys - theirs) or any(e.defined for e in items)

    def _operator_reason(self, name: str, items: list[Export], fresh: set[str]) -> str:
        """A new operator is allowed on a type the candidate defines (and outside code does not
        name), or on CUDA vector types when no operator of that symbol outside the region could
        have served the same arguments: none in a project file, none in a header on those
        types."""
        types = {t for e in items for t in e.parameter_types}
        if types & fresh:
            return ""
        vectors = {t for t in types if builtin_vector(t)}
        if vectors and types <= vectors | ARITHMETIC:
            clash = [
                o
                for o in self.reference.operators
                if o.symbol == name and (o.project or o.words & vectors)
            ]
            if not clash:
                return ""
        return (
            f"declares {name} at namespace scope on types it does not define "
            f"({', '.join(sorted(types)) or 'none'}): it could change what that operator does "
            "in the code outside the region; use a named function"
        )

    # -- 2. state -----------------------------------------------------------------------------

    def _state(self) -> Iterable[tuple[str, int]]:
        for word, line in self.code.unread_storage:
            yield f"keeps state across calls: `{word}` in code the parser could not read", line
        for var in self.code.variables:
            if (var.name, var.where) in self.reference.variables and var.where == "extern":
                continue
            if var.where == "extern":
                yield f"declares extern variable {var.name}, defined outside the region", var.line
            elif not self._constant(var):
                space = next((a for a in ("device", "managed", "constant") if a in var.attrs), "")
                what = f"__{space}__ " if space else ""
                yield (
                    f"keeps state across calls in {var.where} {what}variable {var.name}",
                    var.line,
                )

    def _constant(self, var: Variable) -> bool:
        """A compile-time constant: constexpr, or const/`__constant__` of arithmetic or enum
        type (arrays included, or a pointer const at every level to such), initialized without
        running code."""
        if "managed" in var.attrs:
            return False
        if var.constexpr:  # evaluated by the compiler, read-only after
            return var.form != "reference" and var.type not in self.code.mutable_types
        if var.initializer == "runs-code":
            return False
        if not (var.const or "constant" in var.attrs) or var.form in ("pointer", "reference"):
            return False
        if var.type_kind == "placeholder_type_specifier":
            return var.initializer == "constant"
        return self._arithmetic(var.type)

    def _arithmetic(self, type_text: str, depth: int = 0) -> bool:
        name = " ".join(w for w in type_text.split() if w not in ("const", "volatile"))
        if name in self.code.enums:
            return True
        if name in self.code.typedefs and depth < 8:
            return self._arithmetic(self.code.typedefs[name], depth + 1)
        return self.table.is_arithmetic_type(type_text)

    # -- 3 and 4. calls, names and types ------------------------------------------------------

    def _use_reason(self, use: Use) -> str:
        name = use.name
        last = unqualified(name)
        if last in PRIMITIVE or (use.called and name in BUILTINS):
            return ""
        if name.startswith("__builtin_"):
            return f"calls compiler builtin {name}, which is not known to be pure"
        decls = self._decls(use)
        functions = [d for d in decls if d.kind == FUNCTION]
        types = [d for d in decls if d.kind == TYPE]
        variables = [d for d in decls if d.kind == VARIABLE and (not d.member or "::" in name)]
        if use.own_overload:
            return self._own_overload_reason(use, functions)
        if last in self.reference.uses:
            return self._original_call_reason(use, functions)
        if use.called and not decls:
            return f"calls {name}, which nothing declares"
        if not decls and "::" in name and "(" not in name:
            return f"uses {name}, which nothing declares"
        if types and (use.type_context or not functions or use.called):
            return self._type_reason(name, types)
        if functions:
            reason = self._function_reason(last, functions)
            return f"{'calls' if use.called else 'uses'} {name}: {reason}" if reason else ""
        if variables and not types:
            return self._variable_reason(name, variables)
        return ""

    def _decls(self, use: Use) -> list[Decl]:
        if use.method:
            return [d for d in self.table.named(unqualified(use.name)) if d.member]
        first, _, rest = use.name.partition("::")
        name = (
            f"{self.code.aliases[first]}::{rest}"
            if rest and first in self.code.aliases
            else use.name
        )
        decls = self.table.lookup(name)
        return decls if "::" in use.name else [d for d in decls if not d.member]

    def _own_overload_reason(self, use: Use, functions: list[Decl]) -> str:
        """The candidate's own function shares its name with others that overload resolution
        could pick instead: those must be allowed too."""
        if not functions or unqualified(use.name) in self.reference.uses:
            return ""
        reason = self._function_reason(unqualified(use.name), functions)
        return (
            f"its {use.name} overloads one declared in {functions[0].file}: {reason}"
            if reason
            else ""
        )

    def _original_call_reason(self, use: Use, functions: list[Decl]) -> str:
        """A function the original also uses: allowed, but where the declarations alone would
        not allow it, the call must pass what one of the original's calls passes (the same
        string literals, argument by argument), so a forged message cannot be printed."""
        if (
            not use.called
            or not functions
            or not self._function_reason(unqualified(use.name), functions)
        ):
            return ""
        shapes = self.reference.calls.get(unqualified(use.name), set())
        if use.shape is None:
            return f"calls {use.name} where the code could not be parsed"
        if use.shape in shapes:
            return ""
        strings = [s for group in use.shape for s in group]
        shown = f" with {', '.join(strings)}" if strings else ""
        return f"calls {use.name}{shown}, unlike any call of it in the original"

    def _function_reason(self, last: str, functions: list[Decl]) -> str:
        """'' when calling `last` is allowed: a toolkit function that is device-only or in the
        toolkit's pure parts (not a clock, sleep, device printf or heap call; CUDA runtime
        calls only from RUNTIME_CALLS), a device-only project function, or a function of a
        pure standard header. Otherwise why not."""
        if last in REFUSED_TOOLKIT or any(part in last.lower() for part in TIMER_PARTS):
            return "reads a clock, sleeps, or prints or allocates from device code"
        if last.startswith(("cuda", "__cuda")) and any(d.origin == TOOLKIT for d in functions):
            return "" if last in RUNTIME_CALLS else "a CUDA runtime call outside the allowed few"
        for decl in functions:
            if decl.origin == TOOLKIT and (
                decl.device_only or decl.header.startswith(PURE_TOOLKIT)
            ):
                return ""
            if decl.origin != TOOLKIT and decl.device_only:
                return ""
            if decl.origin == SYSTEM and decl.header in PURE_STD:
                return ""
        decl = functions[0]
        where = {TOOLKIT: "a CUDA library", SYSTEM: "a system header", PROJECT: "the project"}
        return f"a host function of {where.get(decl.origin, decl.origin)} ({decl.file})"

    def _type_reason(self, name: str, types: list[Decl], depth: int = 0) -> str:
        """A class with constructors or a destructor runs them: they must be callable.
        Typedefs and aliases are followed to the class they name."""
        for alias in (t for t in types if t.typedef not in ("", "?") and depth < 8):
            target = _plain_type(alias.typedef)
            reason = (
                self._type_reason(target, self.table.lookup(target), depth + 1) if target else ""
            )
            if reason:
                return reason
        if not any(t.record and t.special for t in types):
            return ""
        last = unqualified(name)
        ctors = [
            d
            for d in self.table.named(last)
            if d.kind == FUNCTION and d.member and d.qualified.endswith(f"{last}::{last}")
        ]
        reason = self._function_reason(last, ctors) if ctors else "its constructors are unknown"
        return f"constructs {name}: {reason}" if reason else ""

    def _variable_reason(self, name: str, variables: list[Decl]) -> str:
        if unqualified(name) in CUDA_BUILTINS:
            return ""
        for var in variables:
            if var.constexpr or (
                var.const and (var.arithmetic or self.table.is_arithmetic_type(var.typedef))
            ):
                return ""
        return f"uses {name}, a variable outside the region ({variables[0].file})"

    # -- 5. attributes and pragmas, 6. host asm, and launch streams ---------------------------

    def _attributes(self) -> Iterable[tuple[str, int]]:
        """Attributes on the list or the original's; pragmas unroll and nounroll or the
        original's (no other directive survives preprocessing)."""
        for name, line in self.code.attributes:
            if name not in ALLOWED_ATTRIBUTES and name not in self.reference.attributes:
                yield f"attribute {name}", line
        for text, line in self.code.directives:
            words = text.lstrip("#").split()
            if words[:1] == ["pragma"] and words[1:2] and words[1].split("(")[0] in ALLOWED_PRAGMAS:
                continue
            if " ".join(text.split()) not in self.reference.directives:
                yield f"directive {' '.join(words[:3])}", line

    def _asm(self) -> Iterable[tuple[str, int]]:
        if not self.host:
            return
        for text, line in self.code.host_asm:
            if text not in self.reference.host_asm:
                yield "asm in host code", line

    def _streams(self) -> Iterable[tuple[str, int]]:
        for text, line in self.code.launch_streams:
            if text not in STREAMS and text not in self.reference.streams:
                yield f"launches on stream {text}, which the original does not use", line
