"""The `#define`s of a header, and their expansion inside a piece of code (pure: text in, text out).

This is the paper's one adjustment to RAJAPerf: a kernel's body lives in macros of its header
(`K.hpp`), shared by every variant, so the Base_CUDA kernels are tagged with those macros expanded
inside the region only. The reader follows the preprocessor's phases where they matter: lines
joined at backslash-newlines before comments are removed (a `//` comment on a continued line eats
the rest of the definition), comments inside definitions dropped, `#undef` honoured, and every
definition kept with the `#if` conditions around it (an include guard is not a condition). The
expander replaces object-like and function-like macros (arguments expanded first, `__VA_ARGS__`),
rescans the result with the macro's own name hidden, and keeps the line breaks of a multi-line
definition, indented like the line it is used on. A macro defined under `#if` is expanded only
where it stands as a statement on its own line: the header's conditions are then written around
each definition's expansion, so the region means what it meant under every configuration.
What it cannot do faithfully (`#` and `##` in a body it must expand, a conditional macro inside an
expression) is a `MacroError` naming the macro and line: the kernel is reported, never mangled.
"""

from __future__ import annotations

import re
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

_TOKEN = re.compile(
    r"""(?P<comment>//[^\n]*|/\*.*?\*/)
      | (?P<string>"(?:\\.|[^"\\\n])*"|'(?:\\.|[^'\\\n])*')
      | (?P<space>\s+)
      | (?P<word>[A-Za-z_]\w*)
      | (?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)
      | (?P<punct>\#\#|.)""",
    re.VERBOSE | re.DOTALL,
)
_DIRECTIVE = re.compile(r"\s*#\s*(\w*)\s*(.*)", re.DOTALL)
_DEFINE = re.compile(r"([A-Za-z_]\w*)(\(([^)]*)\))?(.*)", re.DOTALL)


class MacroError(ValueError):
    """A macro the expander cannot expand faithfully; the message names it and where."""


@dataclass(frozen=True)
class Macro:
    """One `#define`: its parameters (None when object-like), replacement text (line breaks
    where the definition continued on the next line, comments removed), the line it starts on,
    and the `#if` conditions around it, as preprocessor expressions (empty: unconditional)."""

    name: str
    params: tuple[str, ...] | None
    variadic: bool
    body: str
    line: int
    conditions: tuple[str, ...] = ()


@dataclass(frozen=True)
class Defines:
    """A header's macros by name: every definition of each, in order; `undefined` holds the names
    an `#undef` under a condition makes uncertain."""

    macros: Mapping[str, tuple[Macro, ...]]
    undefined: frozenset[str] = frozenset()


def _splice(text: str) -> tuple[str, list[int]]:
    """Backslash-newlines removed: (the text, the offsets where a splice was)."""
    out: list[str] = []
    marks: list[int] = []
    length = 0
    for piece in re.split(r"(\\[ \t]*\r?\n)", text):
        if piece.startswith("\\") and piece.rstrip(" \t\r\n") == "\\" and piece.endswith("\n"):
            marks.append(length)
        else:
            out.append(piece)
            length += len(piece)
    return "".join(out), marks


def _strip_comments(text: str, marks: Sequence[int]) -> tuple[str, list[int]]:
    """Comments replaced by a space (a block comment's newlines kept); the splice marks outside
    comments, moved to the new offsets."""
    out: list[str] = []
    kept: list[int] = []
    pending = sorted(marks)
    length = 0
    for match in _TOKEN.finditer(text):
        start, end = match.span()
        chunk = match.group()
        comment = match.lastgroup == "comment"
        if comment:
            chunk = " " + "\n" * chunk.count("\n")
        while pending and pending[0] < end:
            mark = pending.pop(0)
            if not comment or mark <= start:
                kept.append(length + mark - start if not comment else length)
        out.append(chunk)
        length += len(chunk)
    kept.extend(length for _ in pending)
    return "".join(out), kept


class _Frames:
    """The open #if groups: each one's branch conditions so far and the include guard."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.current: list[str] = []
        self.guard: str | None = None  # the include guard's macro, while its #ifndef is open
        self.guard_depth = -1

    def open(self, keyword: str, argument: str) -> None:
        argument = argument.strip()
        if keyword == "ifdef":
            expr = f"defined({argument})"
        elif keyword == "ifndef":
            expr = f"!defined({argument})"
            if not self.seen and self.guard is None:
                self.guard, self.guard_depth = argument, 0
        else:
            expr = f"({argument})"
        self.seen.append([expr])
        self.current.append(expr)

    def other(self, keyword: str, argument: str) -> None:
        negated = " && ".join(f"!{e}" if e.startswith("(") else f"!({e})" for e in self.seen[-1])
        if keyword == "else":
            self.current[-1] = negated
        else:
            expr = f"({argument.strip()})"
            self.current[-1] = f"{negated} && {expr}"
            self.seen[-1].append(expr)
        if len(self.seen) - 1 == self.guard_depth:
            self.guard_depth = -2  # an #else of the guard: no longer a guard

    def close(self) -> None:
        self.seen.pop()
        self.current.pop()
        if len(self.seen) == self.guard_depth:
            self.guard_depth = -2

    def conditions(self) -> tuple[str, ...]:
        return tuple(c for d, c in enumerate(self.current) if d != self.guard_depth)


def read_defines(text: str, where: str = "<header>") -> Defines:
    """The macros `text` defines, with the conditions around each; MacroError for a directive it
    cannot follow (an `#else` or `#endif` without `#if`), naming `where` and the line."""
    spliced, marks = _splice(text)
    clean, kept = _strip_comments(spliced, marks)
    macros: dict[str, list[Macro]] = {}
    undefined: set[str] = set()
    frames = _Frames()
    offset, line, mark_index = 0, 1, 0
    for logical in clean.split("\n"):
        start = offset
        offset += len(logical) + 1
        breaks = []
        while mark_index < len(kept) and kept[mark_index] < offset:
            breaks.append(kept[mark_index] - start)
            mark_index += 1
        this_line = line
        line += 1 + len(breaks)
        directive = _DIRECTIVE.fullmatch(logical)
        if not directive:
            continue
        keyword, rest = directive.group(1), directive.group(2)
        if keyword in ("if", "ifdef", "ifndef"):
            frames.open(keyword, rest)
        elif keyword in ("elif", "else", "endif") and not frames.seen:
            raise MacroError(f"{where}:{this_line}: #{keyword} without #if")
        elif keyword in ("elif", "else"):
            frames.other(keyword, rest)
        elif keyword == "endif":
            frames.close()
        elif keyword == "define":
            found = _DEFINE.fullmatch(rest)
            if not found or (found.group(1) == frames.guard and not found.group(4).strip()):
                continue  # malformed, or the include guard's own #define
            at = directive.start(2) + found.start(4)
            body = _with_breaks(found.group(4), [b - at for b in breaks])
            params, variadic = _params(found.group(3)) if found.group(2) else (None, False)
            name = found.group(1)
            macro = Macro(name, params, variadic, body, this_line, frames.conditions())
            macros.setdefault(name, []).append(macro)
        elif keyword == "undef":
            if frames.conditions():
                undefined.add(rest.strip())
            else:
                macros.pop(rest.strip(), None)
    return Defines({k: tuple(v) for k, v in macros.items()}, frozenset(undefined))


def _with_breaks(body: str, breaks: Sequence[int]) -> str:
    """`body` with a line break at each splice offset inside it, blank lines dropped."""
    pieces, last = [], 0
    for cut in sorted(b for b in breaks if 0 < b < len(body)):
        pieces.append(body[last:cut])
        last = cut
    pieces.append(body[last:])
    return "\n".join(p.rstrip() for p in pieces if p.strip()).strip()


def _params(text: str) -> tuple[tuple[str, ...], bool]:
    names = [p.strip() for p in text.split(",") if p.strip()]
    variadic = bool(names) and names[-1] == "..."
    return tuple(names[:-1] if variadic else names), variadic


def _tokens(text: str) -> list[tuple[str, str]]:
    return [(m.lastgroup or "punct", m.group()) for m in _TOKEN.finditer(text)]


class Expander:
    """Expands the macros of `defines` (and only those) in code."""

    def __init__(self, defines: Defines, where: str = "<region>") -> None:
        self.defines = defines
        self.where = where
        self.used: set[str] = set()

    def expand(self, text: str, hidden: frozenset[str] = frozenset(), line: int = 1) -> str:
        """`text` with the known macros replaced; MacroError where it cannot be done faithfully."""
        tokens = _tokens(text)
        out: list[str] = []
        i = 0
        while i < len(tokens):
            kind, value = tokens[i]
            i += 1
            known = self.defines.macros.get(value) if kind == "word" else None
            if not known or value in hidden:
                out.append(value)
                continue
            here = line + "".join(out).count("\n")
            if value in self.defines.undefined:
                raise MacroError(f"{self.where}:{here}: {value} is #undef'd under a condition")
            self.used.add(value)
            if len(known) > 1 or known[0].conditions:
                i = self._conditional(known, tokens, i, out, hidden, here)
                continue
            macro = known[0]
            self._no_paste(macro, here)
            if macro.params is None:
                out.append(self._indent(self.expand(macro.body, hidden | {value}, here), out))
                i = _one_semicolon(out[-1], tokens, i)
                continue
            call = _call(tokens, i)
            if call is None:  # a function-like macro's name without arguments: not a use
                out.append(value)
                continue
            args, i = call
            body = self._substitute(macro, args, hidden, here)
            out.append(self._indent(self.expand(body, hidden | {value}, here), out))
            i = _one_semicolon(out[-1], tokens, i)
        return "".join(out)

    def _no_paste(self, macro: Macro, line: int) -> None:
        if any(v in ("#", "##") for _, v in _tokens(macro.body)):
            raise MacroError(
                f"{self.where}:{line}: {macro.name} uses # or ##, which is not expanded here"
            )

    def _substitute(self, macro: Macro, args: list[str], hidden: frozenset[str], line: int) -> str:
        params = macro.params or ()
        if len(args) == 1 and not args[0].strip() and not params and not macro.variadic:
            args = []
        if len(args) < len(params) or (len(args) > len(params) and not macro.variadic):
            raise MacroError(
                f"{self.where}:{line}: {macro.name} takes {len(params)} arguments, got {len(args)}"
            )
        values = {
            p: self.expand(a.strip(), hidden, line) for p, a in zip(params, args, strict=False)
        }
        if macro.variadic:
            values["__VA_ARGS__"] = ",".join(args[len(params) :]).strip()
        return "".join(values.get(v, v) if k == "word" else v for k, v in _tokens(macro.body))

    def _conditional(
        self,
        known: tuple[Macro, ...],
        tokens: list[tuple[str, str]],
        i: int,
        out: list[str],
        hidden: frozenset[str],
        line: int,
    ) -> int:
        """A macro defined under #if, used as a statement on its own line: each definition's
        expansion under its conditions (the last definition first), the name itself where none
        holds."""
        name = known[0].name
        before = "".join(out).rpartition("\n")
        rest_end = i
        while (
            rest_end < len(tokens)
            and tokens[rest_end][0] == "space"
            and "\n" not in tokens[rest_end][1]
        ):
            rest_end += 1
        semicolon = rest_end < len(tokens) and tokens[rest_end][1] == ";"
        after = rest_end + 1 if semicolon else rest_end
        at_end = after >= len(tokens) or (tokens[after][0] == "space" and "\n" in tokens[after][1])
        if before[2].strip() or not at_end or any(m.params is not None for m in known):
            raise MacroError(
                f"{self.where}:{line}: {name} is defined under #if (line {known[0].line}); it is"
                " expanded only as a statement on its own line"
            )
        indent = before[2]
        tail = ";" if semicolon else ""
        text = "".join(out)
        out[:] = [text[: len(text) - len(indent)]]
        lines = []
        for n, macro in enumerate(reversed(known)):  # a later definition wins where it holds
            condition = " && ".join(macro.conditions) or "1"
            lines.append(f"#{'if' if n == 0 else 'elif'} {condition}")
            self._no_paste(macro, line)
            body = self.expand(macro.body, hidden | {name}, line)
            end = "" if body.rstrip().endswith(";") else tail
            lines.append(indent + body.replace("\n", "\n" + indent) + end)
        lines += ["#else", indent + name + tail, "#endif"]
        out.append("\n".join(lines))
        return after

    @staticmethod
    def _indent(expansion: str, out: list[str]) -> str:
        """Later lines of a multi-line expansion indented like the line it is used on."""
        if "\n" not in expansion:
            return expansion
        current = "".join(out).rpartition("\n")[2]
        indent = current[: len(current) - len(current.lstrip())]
        first, _, rest = expansion.partition("\n")
        return "\n".join([first] + [indent + p for p in textwrap.dedent(rest).split("\n")])


def _call(tokens: list[tuple[str, str]], i: int) -> tuple[list[str], int] | None:
    """The arguments of a call whose `(` follows at `i` (after spaces and comments), and the index
    after its `)`; None when no `(` follows."""
    j = i
    while j < len(tokens) and tokens[j][0] in ("space", "comment"):
        j += 1
    if j >= len(tokens) or tokens[j][1] != "(":
        return None
    depth = 0
    args: list[str] = []
    current: list[str] = []
    for k in range(j + 1, len(tokens)):
        value = tokens[k][1]
        if value in "([{" and tokens[k][0] == "punct":
            depth += 1
        elif value in ")]}" and tokens[k][0] == "punct":
            if depth == 0 and value == ")":
                args.append("".join(current))
                return args, k + 1
            depth -= 1
        elif value == "," and depth == 0:
            args.append("".join(current))
            current = []
            continue
        current.append(value if tokens[k][0] != "comment" else " ")
    return None


def _one_semicolon(expansion: str, tokens: list[tuple[str, str]], i: int) -> int:
    """Past the `;` written after a use whose expansion already ends with one (`BODY;` where
    BODY ends in `;`): the statement is the same, without an empty one after it."""
    if not expansion.rstrip().endswith(";"):
        return i
    j = i
    while j < len(tokens) and tokens[j][0] == "space" and "\n" not in tokens[j][1]:
        j += 1
    return j + 1 if j < len(tokens) and tokens[j][1] == ";" else i
