"""What the search policy learns about the region's kernels through tools before it changes
anything: where they are launched and with which block sizes (`search`, `file_viewer`), the
constants those sizes name, the builtin types behind the pointers' element type aliases, and which
arguments the helper functions a kernel passes its local arrays to cannot write through (their
declarations, read with `search` and `file_viewer`)."""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Mapping
from dataclasses import replace

from nvcc_opt.search.cuda import LDG_TYPES, Kernel, Source, walk
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import (
    Launch,
    definitions,
    facts_from,
    launches,
    macro_types,
    type_aliases,
)
from nvcc_opt.search.observed_lines import search_hits, search_lines, statement
from nvcc_opt.search.pointer_aliases import (
    alias_parameters,
    expand,
    pointer_aliases,
    pointer_holders,
    pointer_names,
    unresolved_pointers,
)
from nvcc_opt.search.shared_tiles import column_words
from nvcc_opt.search.signatures import merge, readonly_params, signature_text
from nvcc_opt.search.steps import Call, Step
from nvcc_opt.workspace.defines import defaults

LAUNCH_LINES = 8  # a launch written over several lines: how many file_viewer shows from its first
ALIAS_ROUNDS = 3  # searches for an element type's typedef: an alias of an alias of a builtin
VALUE_ROUNDS = 2  # searches for a block size's names, then for the names their values use
MAX_TYPE_NAMES = 6  # type names of kernel parameters looked up as possible pointer types
MAX_HELPERS = 8  # helpers whose declarations are looked up
MAX_DECLARATIONS = 3  # declarations read per helper (a prototype, a definition, an overload)
SIGNATURE_LINES = 16
# What may stand before a function's name on the line that declares it (`static __device__ void`).
DECLARATION_PREFIX = re.compile(r"[A-Za-z_][\w\s:<>,*&]*[\w*&>]")
NOT_CONSTANTS = {"dim3", "sizeof", "alignof", "static_cast", "const", "constexpr", "std", "min",
                 "max", "true", "false", "nullptr"}  # fmt: skip
TYPE_WORDS = {w for t in LDG_TYPES for w in t.split()} | {"size_t", "auto", "void", "bool"}
NOT_A_TYPE = {"return", "else", "case", "do", "new", "delete", "throw", "goto", "co_return"}


def gather(
    code: str,
    offered: set[str],
    room: Callable[[], bool],
    given: Mapping[str, str] | None = None,
) -> Generator[Step, str, Facts]:
    """Launch block sizes and pointer aliasing, from the region and from `search`; `given`: the
    macros the build's command line defines (compiler_analysis names them), constants and type
    names as the region's own `#define`s are (a name the region defines otherwise is dropped)."""
    source = Source(code)
    kernels = source.kernels()
    found = launches(code)
    names, dropped = with_command_line(code, definitions(code), given or {})
    if "search" in offered:
        for kernel in kernels:
            if any(launch.kernel == kernel.name for launch in found) or not room():
                continue
            seen = yield Call(
                "search",
                {"pattern": _launched(kernel.name), "regex": True},
                f"Finding where {kernel.name} runs.",
            )
            for path, number, line in search_hits(seen):
                complete = _complete(line)  # a statement on one line: nothing more to read
                if not _launches(line) and not complete and "file_viewer" in offered and room():
                    window = yield Call(
                        "file_viewer",
                        {"path": path, "start": number, "end": number + LAUNCH_LINES - 1},
                        f"Reading the rest of the launch of {kernel.name}.",
                    )
                    line = statement(search_lines(window))
                found += _launches(line)
        wanted = {w for launch in found for w in _words(launch.block)} | column_words(source)
        names = yield from _values(wanted, names, dropped, room)
    pointers, types, asked = (
        pointer_aliases(code),
        macro_types(names, type_aliases(code)),
        set(dropped),  # a name the command line and the region disagree on is not looked up
    )
    # every name seen defined as a pointer, resolved or not, and the structs holding pointers
    named = pointer_names(code) | pointer_holders(code)
    if "search" in offered:
        pointers, types = yield from _pointer_aliases(code, pointers, types, asked, named, room)
    spelled = expand(code, pointers)  # what the transforms will see
    if "search" in offered:
        types = yield from _aliases(Source(spelled).kernels(), types, room, asked)
    facts = replace(facts_from(spelled, found, names, types), pointer_aliases=pointers)
    unresolved = unresolved_pointers(spelled, named - set(pointers))  # may hide a pointer
    facts = replace(facts, no_alias=facts.no_alias - unresolved)
    if "search" not in offered or "file_viewer" not in offered:
        return facts
    params = yield from _helper_params(source, kernels, dict(facts.readonly_params), room)
    return replace(facts, readonly_params=params)


def with_command_line(
    code: str, names: dict[str, str], given: Mapping[str, str]
) -> tuple[dict[str, str], set[str]]:
    """The region's definitions with the command line's macros, and the names dropped: a name
    the region defines otherwise is dropped, unless the region's is a default for it
    (`#ifndef BLOCK` / `#define BLOCK 128`), which the command line's value overrides."""
    dropped: set[str] = set()
    for name, value in given.items():
        if names.setdefault(name, value) == value:
            continue
        if defaults(code, name):
            names[name] = value
        else:
            del names[name]
            dropped.add(name)
    return names, dropped


def _values(
    wanted: set[str], names: dict[str, str], dropped: set[str], room: Callable[[], bool]
) -> Generator[Step, str, dict[str, str]]:
    """`names` with the values of the `wanted` names (a block size's) found with `search`, then
    of the names those values use (`dim3 b(THREADS)`), a round each; only the searched name's
    own definition is taken from the lines found. A dim3 found so is kept only where every line
    that names it is its declaration or a launch (`_dim3_untouched`): its branches, calls and
    later changes cannot be read from lines."""
    searched: set[str] = set(dropped)
    for _ in range(VALUE_ROUNDS):
        known = set(names)
        while True:  # through the values known already: `dim3 b(THREADS)` in the region
            more = {w for word in wanted & set(names) for w in _words(names[word])} - wanted
            if not more:
                break
            wanted |= more
        wanted = wanted - known - searched
        found: set[str] = set()
        for word in sorted(wanted):
            if not room():
                break
            searched.add(word)
            seen = yield Call(
                "search",
                {"pattern": _value_of(word), "regex": True},
                f"Finding the value of {word}.",
            )
            value = definitions("\n".join(search_lines(seen)), whole=False).get(word)
            if value is None:
                continue
            if value.startswith("dim3") and room():
                why = f"Checking that nothing changes {word} before it is launched with."
                mentions = yield Call("search", {"pattern": rf"\b{word}\b", "regex": True}, why)
                if not _dim3_untouched(word, mentions):
                    continue
            names.setdefault(word, value)
            found.add(word)
        wanted = {w for word in found for w in _words(names[word])}
    return names


def _dim3_untouched(word: str, observation: str) -> bool:
    """Whether every line a search for `word` found declares it as a dim3 or names it only in a
    launch's configuration (`<<<grid, word>>>`); a search that shows no lines tells nothing."""
    lines = search_lines(observation)
    if not lines:
        return False
    for line in lines:
        if re.search(rf"\bdim3\s+{word}\b", line):
            continue
        outside = re.sub(r"<<<[^;]*?>>>", " ", line)
        if re.search(rf"\b{word}\b", outside):
            return False
    return True


def _helper_params(
    source: Source,
    kernels: list[Kernel],
    known: dict[str, frozenset[int]],
    room: Callable[[], bool],
) -> Generator[Step, str, dict[str, frozenset[int]]]:
    """The write-free argument positions of the helpers the kernels pass a name to bare (an
    array, or a value a reference could change), from their declarations in the files."""
    wanted: list[str] = []
    for kernel in kernels:
        for node in walk(kernel.body):
            if node.type != "call_expression":
                continue
            function, arguments = (
                node.child_by_field_name("function"),
                node.child_by_field_name("arguments"),
            )
            if function is not None and function.type == "template_function":
                function = function.child_by_field_name("name")
            if function is None or arguments is None or function.type != "identifier":
                continue
            name = source.text(function)
            bare = any(c.type == "identifier" for c in arguments.named_children)
            if bare and name not in known and name not in wanted:
                wanted.append(name)
    params = dict(known)
    for name in wanted[:MAX_HELPERS]:
        if not room():
            break
        seen = yield Call(
            "search",
            {"pattern": rf"\b{name}\s*\(", "regex": True},
            f"Finding the declaration of {name}: which arguments it cannot write.",
        )
        read = 0
        for path, number, line in search_hits(seen):
            if read == MAX_DECLARATIONS or not room() or not _declares(line, name):
                continue
            read += 1
            window = yield Call(
                "file_viewer",
                {"path": path, "start": number, "end": number + SIGNATURE_LINES - 1},
                f"Reading the parameters of {name}.",
            )
            found = readonly_params(signature_text(search_lines(window))).get(name)
            params = merge(params, {name: found if found is not None else frozenset()})
    return params


def _declares(line: str, name: str) -> bool:
    """Whether the line reads as the start of a declaration of `name`: a return type (and
    qualifiers) before it, no assignment, call or statement keyword."""
    before = re.split(rf"\b{re.escape(name)}\s*\(", line, maxsplit=1)[0].strip()
    if not before or not DECLARATION_PREFIX.fullmatch(before):
        return False
    return not set(re.findall(r"\w+", before)) & NOT_A_TYPE


def _aliases(
    kernels: list[Kernel], types: dict[str, str], room: Callable[[], bool], asked: set[str]
) -> Generator[Step, str, dict[str, str]]:
    """Pointer element types that are aliases (`Real_t`), resolved through `search` for their
    `typedef`/`using`, alias of alias included (a few rounds); one defined differently in two
    places (a precision switch) stays unresolved."""
    for _ in range(ALIAS_ROUNDS):
        wanted = {
            w
            for kernel in kernels
            for p in kernel.pointers
            if (w := " ".join(x for x in p.element.split() if x not in ("const", "volatile")))
            not in LDG_TYPES
        }
        wanted = {_last_alias(w, types) for w in wanted} - set(LDG_TYPES) - asked
        wanted = {w for w in wanted if re.fullmatch(r"[A-Za-z_]\w*", w)}
        if not wanted:
            break
        for word in sorted(wanted):
            asked.add(word)
            if not room():
                return types
            seen = yield Call(
                "search",
                {"pattern": _definition(word), "regex": True},
                f"Finding what type {word} is.",
            )
            lines = "\n".join(search_lines(seen))
            types = macro_types(definitions(lines), type_aliases(lines, types))
    return types


def _pointer_aliases(
    code: str,
    pointers: dict[str, str],
    types: dict[str, str],
    asked: set[str],
    named: set[str],
    room: Callable[[], bool],
) -> Generator[Step, str, tuple[dict[str, str], dict[str, str]]]:
    """The pointer types behind the names kernel parameters are declared with (`Real_ptr a`),
    from their `using`/`typedef` found with `search` (pointer_aliases.py); a name that turns out
    to be a builtin type's alias is kept with `types`, every name seen defined as a pointer in
    `named` (and each name searched once: `asked`)."""
    for word in sorted(alias_parameters(code) - set(pointers) - set(types) - asked)[
        :MAX_TYPE_NAMES
    ]:
        if not room():
            break
        asked.add(word)
        seen = yield Call(
            "search", {"pattern": _definition(word), "regex": True}, f"Finding what type {word} is."
        )
        lines = "\n".join(search_lines(seen))
        pointers = pointer_aliases(lines, pointers)
        types = macro_types(definitions(lines), type_aliases(lines, types))
        named |= pointer_names(lines)
    return pointers, types


def _complete(line: str) -> bool:
    """Whether the line ends a statement it holds whole: `;` last, parentheses balanced (a `for`
    header's `;` or a call that goes on below do not count)."""
    return line.rstrip().endswith(";") and line.count("(") == line.count(")")


def _launched(kernel: str) -> str:
    """A `search` pattern for the kernel's launches: `k<<<`, `k<256><<<`, and a launch helper's
    first argument (`launch(k, grid, block, ...)`, `launch((k<256>), ...)`)."""
    return rf"\b{kernel}\b\s*(<[^;()]*?>)?\s*(<<<|\)?\s*,)"


def _definition(word: str) -> str:
    """A `search` pattern for the `typedef`, `using` or `#define` that defines the type name
    `word`."""
    return rf"(typedef\s[^;]*\b{word}\s*;)|(using\s+{word}\s*=)|(#\s*define\s+{word}\s)"


def _last_alias(word: str, types: dict[str, str]) -> str:
    return types.get(word, word)


def _launches(line: str) -> list[Launch]:
    return launches("void nvcc_opt_launch() {\n" + line + "\n}")


def _value_of(word: str) -> str:
    """A `search` pattern for the lines that give `word` its value: `word = ...`, `word(...)`,
    `word{...}`, `#define word`, and a dim3 declared bare and given extents (`dim3 word;`,
    `word.x = ...`)."""
    return (
        rf"(\b{word}\s*(=|\(|\{{))|(#\s*define\s+{word}\b)|(\bdim3\s+{word}\s*;)"
        rf"|(\b{word}\.[xyz]\s*=)"
    )


def _words(expression: str) -> set[str]:
    """The names an expression uses that may be constants: not keywords or builtin types."""
    words = set(re.findall(r"[A-Za-z_]\w*", expression))
    return {w for w in words if w not in NOT_CONSTANTS and w not in TYPE_WORDS}
