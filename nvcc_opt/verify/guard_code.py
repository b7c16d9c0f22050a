"""A text read the way the static guards need it, and what they report. Pure.

`Code` holds one text's tokens from the region lexer: the live ones (both branches of each
`#if`), the ones the preprocessor would read, directives, `#define` bodies, unterminated
comments and its outline (functions, namespace-scope variables, `using namespace`). `Rest` is
what the file outside the region names and includes. `Finding` is one guard's finding, with the
key that tells whether the original region already had the construct.
"""

from __future__ import annotations

from bisect import bisect_right
from dataclasses import dataclass

from nvcc_opt.regions.lexer import (
    COMMENT,
    DIRECTIVE,
    UNTERMINATED,
    WORD,
    Token,
    read_branches,
    tokenize,
)
from nvcc_opt.verify.declarations import Outline, Tok, close, merge_scopes


@dataclass(frozen=True)
class Finding:
    guard: str
    key: str  # the same key in the original region means the construct is not new
    detail: str
    line: int = 0  # 0: the finding has no line in the candidate

    def reason(self) -> str:
        where = f" at line {self.line} of the candidate" if self.line else ""
        return f"guard_{self.guard}: {self.detail}{where}"


@dataclass(frozen=True)
class Rest:
    """What the file outside the region names and includes."""

    words: frozenset[str]
    includes: frozenset[str]


def rest_of_file(region: str, file_text: str | None) -> Rest | None:
    if file_text is None:
        return None
    text, region = file_text.replace("\r\n", "\n"), region.replace("\r\n", "\n")
    at = text.find(region)
    if at < 0 or not region:
        return None
    rest = Code(text[:at] + text[at + len(region) :])
    words = {part for tok in rest.live + rest.macros for part in tok.text.split("::")}
    for directive in rest.directives:
        words.update(t.text for t in _sub_tokens(directive) if t.kind == WORD)
    includes = (d for d in rest.directives if words_of(d)[:1] in (["include"], ["include_next"]))
    return Rest(frozenset(words), frozenset(include_path(d) for d in includes))


class Code:
    """One text's tokens, read the way the guards need them."""

    def __init__(self, text: str) -> None:
        src = text.replace("\r\n", "\n").encode("utf-8", "replace")
        raw = tokenize(src)
        read, skipped = read_branches(src, raw)
        starts = [0] + [i + 1 for i, c in enumerate(src) if c == 10]
        self.unterminated = [_tok(src, t, starts) for t in raw if t[0] == UNTERMINATED]
        self.conditionals = [_tok(src, t, starts) for t in raw if t[0] == DIRECTIVE]
        live = [_tok(src, t, starts) for t in sorted(read + skipped, key=_start) if t[0] != COMMENT]
        self.directives = [t for t in live if t.kind == DIRECTIVE]
        self.live = merge_scopes([t for t in live if t.kind != DIRECTIVE])
        self.read = merge_scopes(
            [_tok(src, t, starts) for t in read if t[0] not in (COMMENT, DIRECTIVE)]
        )
        self.macros = [
            t for d in self.directives if words_of(d)[:1] == ["define"] for t in _body(d)
        ]
        self.outline = Outline(self.read)
        self.functions = self.outline.functions


def _tok(src: bytes, token: Token, starts: list[int]) -> Tok:
    kind, start, end = token
    begin = start + 1 if kind == DIRECTIVE else start
    return Tok(kind, src[begin:end].decode("utf-8", "replace"), bisect_right(starts, start))


def _start(token: Token) -> int:
    return token[1]


def _sub_tokens(directive: Tok) -> list[Tok]:
    """The tokens inside a directive line, comments dropped, with their own lines."""
    src = directive.text.encode("utf-8", "replace")
    starts = [0] + [i + 1 for i, c in enumerate(src) if c == 10]
    toks = [_tok(src, t, starts) for t in tokenize(src) if t[0] != COMMENT]
    return [t._replace(line=t.line + directive.line - 1) for t in toks]


def words_of(directive: Tok) -> list[str]:
    return [t.text for t in _sub_tokens(directive) if t.kind == WORD]


def _body(define: Tok) -> list[Tok]:
    """A `#define`'s replacement tokens (its parameter list included: harmless)."""
    return merge_scopes(_sub_tokens(define)[2:])


def group(toks: list[Tok], i: int, opener: str, closer: str) -> list[Tok]:
    """The tokens from the `opener` at or after index `i` (skipping qualifiers) to its closer."""
    while i < len(toks) and toks[i].kind == WORD:
        i += 1  # `asm volatile (`
    if i >= len(toks) or toks[i].text != opener:
        return []
    return toks[i : close(toks, i, opener, closer) + 1]


def include_path(directive: Tok) -> str:
    after = directive.text.strip().split(None, 1)
    text = after[1].strip() if len(after) > 1 else ""
    if text.startswith("<"):
        return text[: text.find(">") + 1]
    if text.startswith('"'):
        return text[: text.find('"', 1) + 1]
    return text
