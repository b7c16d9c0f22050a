"""What one side of a preprocessed region declares, defines, uses and calls (tree-sitter).

`RegionCode` reads the region's own preprocessed lines (`Side.region`) and keeps facts, with
lines counted in the code the model wrote: the names it uses that it does not declare itself
(scopes followed, so a local of the same name elsewhere hides nothing), its namespace-scope
definitions, its variables with static storage, attributes, pragmas, `asm` statements and kernel
launch streams. A name counts as the region's own only where a definition of it is in scope: a
prototype or an `extern` declaration owns nothing, it names something defined elsewhere.
Pure: no I/O; the rules that judge these facts are in `allowlist_rules.py`.

The passes are `RegionCode`'s bases, one module each: `region_scopes` (the parse, and what the
region declares in which scope), `region_definitions` (namespace-scope functions and variables
with static storage), `region_uses` (the names it uses, attributes, directives); this module
runs them and, for robustness, scans the tokens for calls the parse may have missed. `Use` and
`Variable`, which the rules read, are exported here with `RegionCode`.
"""

from __future__ import annotations

import sys
from collections import defaultdict
from dataclasses import dataclass, field

import tree_sitter

from nvcc_opt.regions.lexer import DIRECTIVE, PUNCT, STRING, WORD, tokenize
from nvcc_opt.verify.preprocess import Side
from nvcc_opt.verify.region_definitions import Definition, Variable
from nvcc_opt.verify.region_uses import _KEYWORDS, RegionUses, Use
from nvcc_opt.verify.syntax import parser

__all__ = ["Definition", "RegionCode", "Use", "Variable"]

_STORAGE = frozenset(("static", "thread_local", "__thread"))


@dataclass
class RegionCode(RegionUses):
    """The facts of one side of a region (see the module docstring)."""

    side: Side
    uses: list[Use] = field(default_factory=list)
    definitions: list[Definition] = field(default_factory=list)
    namespaces: list[tuple[str, int]] = field(default_factory=list)  # named ones opened
    variables: list[Variable] = field(default_factory=list)
    attributes: list[tuple[str, int]] = field(default_factory=list)
    directives: list[tuple[str, int]] = field(default_factory=list)  # surviving `#` lines
    host_asm: list[tuple[str, int]] = field(default_factory=list)  # asm outside device code
    launch_streams: list[tuple[str, int]] = field(default_factory=list)
    typedefs: dict[str, str] = field(default_factory=dict)  # the region's typedefs and aliases
    own_types: set[str] = field(default_factory=set)  # classes, enums, typedefs, parameters
    mutable_types: set[str] = field(default_factory=set)  # own classes with a mutable member
    enums: set[str] = field(default_factory=set)  # own enum types
    aliases: dict[str, str] = field(default_factory=dict)  # namespace aliases it declares
    unread_storage: list[tuple[str, int]] = field(default_factory=list)  # `static` not parsed

    def __post_init__(self) -> None:
        self.data = self.side.region.encode("utf-8", "surrogateescape")
        self.tree = parser().parse(self.data)
        self._declared: dict[int, set[str]] = defaultdict(set)
        self._functions: dict[int, set[str]] = defaultdict(set)  # namespace-scope functions
        self._declarators: set[int] = set()
        self._declared_at: set[int] = set()  # where declared names start, for the token scan
        self._storage_at: set[int] = set()  # where the parse read storage classes
        self._members: dict[str, set[str]] = defaultdict(set)  # class -> member names
        self._namespace_bodies: dict[str, list[tree_sitter.Node]] = defaultdict(list)
        root = self.tree.root_node
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(max(limit, 20_000))
        try:
            self._declare(root)
            self._top(root, [], internal=False, extern_c=False)
            self._visit(root, device=False)
        finally:
            sys.setrecursionlimit(limit)
        self._scan_tokens()

    # -- robustness: calls the parse may have missed ------------------------------------------

    def _scan_tokens(self) -> None:
        """`name (` in the region's tokens, for calls inside ERROR nodes or missed otherwise."""
        data = self.data
        starts = [0] + [i + 1 for i, c in enumerate(data) if c == 10]
        tokens = [t for t in tokenize(data) if t[0] in (WORD, PUNCT, STRING, DIRECTIVE)]
        texts = [data[s:e].decode("utf-8", "replace") for _, s, e in tokens]
        seen = {(u.name, u.line) for u in self.uses if u.called}
        own = set().union(*self._declared.values()) if self._declared else set()
        skip_until = -1
        for i, (kind, start, _) in enumerate(tokens):
            if i <= skip_until or kind != WORD:
                continue
            if texts[i] in _STORAGE and start not in self._storage_at:
                self.unread_storage.append((texts[i], self._line_of_row(_row(starts, start))))
            if start in self._declared_at:
                continue
            if texts[i] in ("__attribute__", "__declspec", "asm", "__asm__", "__asm"):
                skip_until = _group_end(texts, i + 1)
                continue
            name, j = _qualified_at(texts, tokens, i)
            skip_until = j - 1
            if j >= len(texts) or texts[j] != "(" or name.split("::")[-1] in _KEYWORDS:
                continue
            if name[:1].isdigit() or name in own or ("::" in name and self._own_qualified(name)):
                continue
            method = i > 0 and texts[i - 1] in (".", "->")
            line = self._line_of_row(_row(starts, start))
            if (name, line) not in seen:
                self.uses.append(Use(name, line, called=True, method=method, shape=None))
                seen.add((name, line))


def _row(starts: list[int], offset: int) -> int:
    lo, hi = 0, len(starts)
    while lo + 1 < hi:
        mid = (lo + hi) // 2
        if starts[mid] <= offset:
            lo = mid
        else:
            hi = mid
    return lo


def _qualified_at(texts: list[str], tokens: list[tuple[int, int, int]], i: int) -> tuple[str, int]:
    """The name `a::b::c` starting at token i, and the index after it."""
    parts = [texts[i]]
    j = i + 1
    while (
        j + 2 < len(texts) and texts[j] == ":" and texts[j + 1] == ":" and tokens[j + 2][0] == WORD
    ):
        parts.append(texts[j + 2])
        j += 3
    return "::".join(parts), j


def _group_end(texts: list[str], i: int) -> int:
    """The index of the `)` closing the first `(` at or after i (qualifiers skipped)."""
    while i < len(texts) and texts[i] != "(":
        if texts[i] in (";", "{", "}"):
            return i
        i += 1
    depth = 0
    for j in range(i, len(texts)):
        depth += (texts[j] == "(") - (texts[j] == ")")
        if depth == 0:
            return j
    return len(texts)
