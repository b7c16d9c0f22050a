"""What a piece of CUDA code declares at namespace scope, for the static guards. Pure.

Reads the region lexer's tokens: function definitions with normalised signatures (so a rewrite
may rename parameters or add `__restrict__` without changing one), mutable variables that outlive
a launch, and namespace-scope `using namespace`. Good enough for the code of one region; not a
C++ parser (a template specialization or an operator is not outlined).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from nvcc_opt.regions.lexer import PUNCT, STRING, WORD


class Tok(NamedTuple):
    kind: int  # the lexer's kinds
    text: str  # `a::b::c` chains are one WORD; a directive's text starts after its `#`
    line: int


def word_set(words: str) -> frozenset[str]:
    return frozenset(words.split())


# Words that take a parenthesised argument and are no part of a type or a name.
_ARG_SPECIFIERS = word_set(
    "__launch_bounds__ __maxnreg__ __cluster_dims__ __attribute__ __declspec alignas "
    "__align__ noexcept throw _Pragma __pragma"
)
_SPECIFIERS = word_set(
    "static inline extern constexpr consteval __inline__ __forceinline__ __noinline__ "
    "virtual explicit friend __host__ __device__ __global__"
)
_NOT_NAMES = _ARG_SPECIFIERS | word_set("decltype sizeof alignof operator requires")
_TYPE_DEFINITIONS = word_set("typedef using namespace struct class union enum")
_NOT_VARIABLES = _TYPE_DEFINITIONS | word_set("extern static_assert friend return")
_IMMUTABLE = frozenset(("constexpr", "__constant__", "__shared__"))
_BUILTIN_TYPES = word_set("int float double char short long unsigned signed bool void")
_CV = frozenset(("const", "volatile"))
_DROPPED_QUALIFIERS = frozenset(("__restrict__", "__restrict", "restrict", "register"))
_SPACES = frozenset(("__global__", "__device__", "__host__"))


def merge_scopes(toks: list[Tok]) -> list[Tok]:
    """`a :: b` as one WORD token `a::b`; a leading `::` is dropped."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        if tok.kind == WORD:
            text, j = tok.text, i + 1
            while _is_scope(toks, j) and j + 2 < len(toks) and toks[j + 2].kind == WORD:
                text, j = f"{text}::{toks[j + 2].text}", j + 3
            out.append(tok._replace(text=text))
            i = j
        elif _is_scope(toks, i) and i + 2 < len(toks) and toks[i + 2].kind == WORD:
            i += 2
        else:
            out.append(tok)
            i += 1
    return out


def _is_scope(toks: list[Tok], i: int) -> bool:
    return i + 1 < len(toks) and toks[i].text == ":" == toks[i + 1].text


def close(toks: list[Tok], i: int, opener: str, closer: str) -> int:
    """Index of the token closing the `opener` at `i`; the last index when none does."""
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].kind == PUNCT:
            depth += (toks[j].text == opener) - (toks[j].text == closer)
            if depth == 0:
                return j
    return len(toks) - 1


def _identifier(text: str) -> bool:
    return text[:1].isalpha() or text[:1] == "_"


@dataclass(frozen=True)
class Param:
    """A parameter's type without its name, default, `__restrict__` or top-level `const`."""

    base: tuple[str, ...]  # the type before the first `*`/`&`, `const` removed
    pointee_const: bool  # `const` in `base` of a pointer or reference
    rest: tuple[str, ...]  # `*`, `&` and the qualifiers between them

    def text(self) -> str:
        words = ["const"] * self.pointee_const + [*self.base, *self.rest]
        return " ".join(words).replace(" *", "*").replace(" &", "&")

    def accepts(self, new: Param) -> bool:
        """Whether `new` may replace this one: the same, or `const` added to a pointee."""
        if (self.base, self.rest) != (new.base, new.rest):
            return False
        return self.pointee_const == new.pointee_const or (
            new.pointee_const and new.rest[:1] == ("*",)
        )


@dataclass(frozen=True)
class Function:
    name: str
    spaces: frozenset[str]  # __global__, or __host__ and/or __device__
    template: str
    returns: str
    params: tuple[Param, ...]
    exported: bool  # host code of other files can call it (external linkage)
    line: int

    def describe(self) -> str:
        if "__global__" in self.spaces:
            kind = "kernel"
        else:
            kind = "-".join(s.strip("_") for s in sorted(self.spaces, reverse=True)) + " function"
        params = ", ".join(p.text() for p in self.params)
        template = f"{self.template} " if self.template else ""
        return f"{kind} {template}{self.returns} {self.name}({params})"

    def accepts(self, new: Function) -> bool:
        """Whether every caller of this function would get `new` just the same."""
        if ("__global__" in self.spaces) != ("__global__" in new.spaces):
            return False
        return (
            self.spaces <= new.spaces
            and (self.name, self.template, self.returns) == (new.name, new.template, new.returns)
            and len(self.params) == len(new.params)
            and all(old.accepts(p) for old, p in zip(self.params, new.params, strict=True))
        )


def changed_signatures(
    old: list[Function], new: list[Function], used_elsewhere: Callable[[str], bool]
) -> list[tuple[str, str, int]]:
    """(name, detail, candidate line or 0) for each function of `old` callers lose in `new`.

    Only exported functions and those `used_elsewhere` count: the others are the region's own.
    """
    changed = []
    for function in old:
        if not (function.exported or used_elsewhere(function.name)):
            continue
        same_name = [f for f in new if f.name == function.name]
        if any(function.accepts(f) for f in same_name):
            continue
        if same_name:
            detail = f"{function.describe()} became {same_name[0].describe()}"
            changed.append((function.name, detail, same_name[0].line))
        else:
            detail = f"{function.describe()} is gone, and code outside the region uses it"
            changed.append((function.name, detail, 0))
    return changed


class Outline:
    """Namespace-scope declarations of one text's tokens (scope chains merged)."""

    def __init__(self, toks: list[Tok]) -> None:
        self.functions: list[Function] = []
        self.variables: list[tuple[str, int]] = []  # mutable state that outlives a launch
        self.using_namespace: list[int] = []
        self._walk(toks)

    def _walk(self, toks: list[Tok]) -> None:
        namespaces: list[bool] = []  # open namespace-like blocks: True for an anonymous one
        start = i = 0
        while i < len(toks):
            text = toks[i].text if toks[i].kind == PUNCT else ""
            if text == "{":
                statement = toks[start:i]
                if _opens_namespace(statement):
                    namespaces.append([t.text for t in statement] == ["namespace"])
                    start = i = i + 1
                    continue
                end = close(toks, i, "{", "}")
                self._statics(toks[i + 1 : end])
                function = _function(statement, exported=not any(namespaces))
                if function is not None:
                    self.functions.append(function)
                    start = end + 1
                i = end + 1  # otherwise the braces are part of a declaration or type
                continue
            if text == "}" and namespaces:
                namespaces.pop()
                start = i + 1
            elif text in ("}", ";"):
                self._declaration(toks[start:i])
                start = i + 1
            i += 1

    def _declaration(self, statement: list[Tok]) -> None:
        if [t.text for t in statement[:2]] == ["using", "namespace"]:
            self.using_namespace.append(statement[0].line)
        name = _mutable_variable(_template_header(statement)[1])
        if name is not None:
            self.variables.append((name, statement[0].line))

    def _statics(self, body: list[Tok]) -> None:
        """Static locals and members in a body: they outlive the call."""
        for k, tok in enumerate(body):
            if tok.kind != WORD or tok.text not in ("static", "thread_local"):
                continue
            end, depth = k, 0
            while end < len(body) and not (depth == 0 and body[end].text in (";", "{")):
                depth += (body[end].text == "(") - (body[end].text == ")")
                end += 1
            name = _mutable_variable(body[k:end])
            if name is not None:
                self.variables.append((name, tok.line))


def _opens_namespace(statement: list[Tok]) -> bool:
    texts = [t.text for t in statement]
    if "namespace" in texts[:2]:
        return True
    return len(statement) == 2 and texts[0] == "extern" and statement[1].kind == STRING


def _template_header(statement: list[Tok]) -> tuple[str, list[Tok]]:
    """(`template <...>` normalised, the rest) of a declaration; ("", all) without one."""
    if [t.text for t in statement[:2]] != ["template", "<"]:
        return "", statement
    end = close(statement, 1, "<", ">")
    words = ["typename" if t.text == "class" else t.text for t in statement[: end + 1]]
    return " ".join(words), statement[end + 1 :]


def _function(statement: list[Tok], *, exported: bool) -> Function | None:
    """The function whose body follows `statement`, or None when that is not a function."""
    template, rest = _template_header(statement)
    if not rest or rest[0].text in _TYPE_DEFINITIONS:
        return None
    depth = 0
    for p, tok in enumerate(rest):
        if tok.kind != PUNCT:
            continue
        if tok.text == "=" and depth == 0:
            return None
        if tok.text == "(" and depth == 0 and p > 0 and _names_function(rest[p - 1]):
            name, prefix = rest[p - 1], rest[: p - 1]
            params = _params(rest[p + 1 : close(rest, p, "(", ")")])
            words = {t.text for t in prefix}
            spaces = frozenset(words & _SPACES) or frozenset(("__host__",))
            local = bool(words & {"static", "inline", "__forceinline__", "__inline__"})
            shared = exported and "__host__" in spaces and "__global__" not in spaces
            kept = [t for t in _without_specifiers(prefix) if t.kind != STRING]  # `extern "C"`
            returns = " ".join(t.text for t in kept if t.text not in _SPACES)
            return Function(
                name.text, spaces, template, returns, params, shared and not local, name.line
            )
        depth += (tok.text == "(") - (tok.text == ")")
    return None


def _names_function(tok: Tok) -> bool:
    last = tok.text.split("::")[-1]
    return tok.kind == WORD and _identifier(last) and last not in _NOT_NAMES


def _without_groups(toks: list[Tok]) -> list[Tok]:
    """`toks` without attributes: `__attribute__((...))`, `__launch_bounds__(...)`, `[[...]]`."""
    out: list[Tok] = []
    i = 0
    while i < len(toks):
        tok = toks[i]
        following = toks[i + 1].text if i + 1 < len(toks) else ""
        if tok.text in _ARG_SPECIFIERS and following == "(":
            i = close(toks, i + 1, "(", ")") + 1
        elif tok.text == "[" and following == "[":
            i = close(toks, i, "[", "]") + 1
        else:
            out.append(tok)
            i += 1
    return out


def _without_specifiers(toks: list[Tok]) -> list[Tok]:
    return [t for t in _without_groups(toks) if t.text not in _SPECIFIERS]


def _split_commas(toks: list[Tok]) -> list[list[Tok]]:
    pieces: list[list[Tok]] = [[]]
    depth = 0
    for tok in toks:
        if tok.kind == PUNCT and tok.text == "," and depth == 0:
            pieces.append([])
            continue
        if tok.kind == PUNCT:
            depth += (tok.text in "([{<") - (tok.text in ")]}>")
        pieces[-1].append(tok)
    return pieces


def _params(toks: list[Tok]) -> tuple[Param, ...]:
    pieces = [p for p in _split_commas(toks) if p]
    if [[t.text for t in p] for p in pieces] == [["void"]]:
        return ()
    return tuple(_param(piece) for piece in pieces)


def _param(toks: list[Tok]) -> Param:
    kept = _without_groups(toks)
    cut = next((k for k, t in enumerate(kept) if t.text == "="), len(kept))  # default argument
    words = [t.text for t in kept[:cut] if t.text not in _DROPPED_QUALIFIERS]
    if "[" in words:
        k = words.index("[")
        if k > 0 and _identifier(words[k - 1]):
            del words[k - 1]
    elif len(words) > 1 and _unqualified_name(words[-1]) and set(words[:-1]) - _CV:
        words.pop()
    stars = [k for k, w in enumerate(words) if w in ("*", "&")]
    if not stars:
        return Param(tuple(w for w in words if w != "const"), False, ())
    base = words[: stars[0]]
    rest = [
        w for k, w in enumerate(words) if k >= stars[0] and not (k > stars[-1] and w == "const")
    ]
    return Param(tuple(w for w in base if w != "const"), "const" in base, tuple(rest))


def _unqualified_name(word: str) -> bool:
    return _identifier(word) and word not in _BUILTIN_TYPES | _CV and "::" not in word


def _mutable_variable(toks: list[Tok]) -> str | None:
    """The name a declaration defines if it is a variable that can change, else None."""
    kept = _without_groups(toks)
    if not kept or kept[0].text in _NOT_VARIABLES:
        return None
    cut = next((k for k, t in enumerate(kept) if t.kind == PUNCT and t.text in "=[{;("), len(kept))
    head = kept[:cut]
    words = [t.text for t in head if t.kind == WORD]
    following = [t.text for t in kept[cut : cut + 2]]
    if following[:1] == ["("] or following == ["=", "["] or len(words) < 2:
        return None  # a function, `T x(args)` (not told apart from one) or a lambda
    if _IMMUTABLE & set(words):
        return None
    stars = [k for k, t in enumerate(head) if t.text in ("*", "&")]
    if any(t.text == "const" for t in head[stars[-1] + 1 if stars else 0 :]):
        return None
    return words[-1] if _identifier(words[-1]) else None
