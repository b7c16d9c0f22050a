"""Find `@optimize` regions in a CUDA source file (pure: bytes in, records out).

The lexer's tokens feed a pragma walker, so braces and `@optimize` inside strings, comments or
`#define`s never count, and braces count in preprocessor branches the way ctags counts them.
Problems become warnings; no input makes `scan` raise. A UTF-8 byte order mark is not part of
the text: it lies outside every region and its hash, and offsets still count it.
"""

from __future__ import annotations

from bisect import bisect_right

from nvcc_opt._sha import sha256
from nvcc_opt.regions.lexer import (
    COMMENT,
    DIRECTIVE,
    PUNCT,
    UNTERMINATED,
    WORD,
    Token,
    bom_length,
    conditional,
    read_branches,
    tokenize,
)
from nvcc_opt.values import RegionSpan, ScanResult, ScanWarning

_NOT_DIRECTLY_ABOVE = "@optimize must be directly above a function definition"
_SKIPPED_BRANCH = (
    "@optimize in an #elif/#else branch after one with unbalanced braces is ignored"
    " (put it above the #if)"
)
# Words that take a parenthesised argument but never name the function being defined.
_NOT_NAMES = frozenset(
    b"__launch_bounds__ __maxnreg__ __cluster_dims__ __attribute__ __declspec alignas __align__"
    b" decltype noexcept throw requires sizeof alignof static_assert if for while switch catch"
    b" return __device__ __host__ __global__ __forceinline__ __noinline__".split()
)


def pragma_words(src: bytes, token: Token) -> list[bytes] | None:
    """The words after `@optimize` if `token` is an `@optimize` pragma comment, else None."""
    kind, start, end = token
    if kind != COMMENT:
        return None
    block = src[start + 1] == 42
    text = src[start + 2 : end - 2 if block else end].lstrip()
    if not text.startswith(b"@optimize") or text[9:10].strip():
        return None
    words = text[9:].split()
    return [w for w in words if w != b"*"] if block else words


def _line_starts(src: bytes) -> list[int]:
    starts = [0]
    nl = src.find(b"\n")
    while nl >= 0:
        starts.append(nl + 1)
        nl = src.find(b"\n", nl + 1)
    return starts


class _Walker:
    """One pass over the pragmas of one file: pairs them with definitions or blocks."""

    def __init__(self, src: bytes) -> None:
        self.src = src
        tokens = tokenize(src)
        self.directives = [t for t in tokens if t[0] == DIRECTIVE]
        self.toks, skipped = read_branches(src, tokens)
        self.starts = _line_starts(src)
        self.pragmas: dict[int, list[bytes]] = {}
        for index, token in enumerate(self.toks):
            words = pragma_words(src, token)
            if words is not None:
                self.pragmas[index] = words
        self.regions: list[RegionSpan] = []
        self.warnings: list[ScanWarning] = []
        self.names: dict[str, int] = {}
        for token in skipped:
            if pragma_words(src, token) is not None:
                self.warn(self.line(token[1]), _SKIPPED_BRANCH)

    def line(self, offset: int) -> int:
        return bisect_right(self.starts, offset)

    def warn(self, line: int, message: str) -> None:
        self.warnings.append(ScanWarning(line, message))

    def run(self) -> ScanResult:
        covered = -1  # token index of the closing brace of the last function region
        block: tuple[int, str | None] | None = None  # open `begin`: token index, name
        for index, words in self.pragmas.items():
            line = self.line(self.toks[index][1])
            parsed = self._parse(words, line)
            if parsed is None:
                continue
            form, name = parsed
            if index < covered:
                self.warn(line, "@optimize inside an @optimize function region is ignored")
            elif form == "begin" and block is not None:
                self.warn(line, "nested @optimize begin is ignored (blocks do not nest)")
            elif form == "begin":
                block = (index, name)
            elif form == "end" and block is None:
                self.warn(line, "@optimize end without begin")
            elif form == "end" and block is not None:
                self._block(block, index, name)
                block = None
            elif block is not None:
                self.warn(line, "@optimize inside a begin/end block is ignored")
            else:
                covered = self._function(index, name)
        if block is not None:
            self.warn(self.line(self.toks[block[0]][1]), "@optimize begin without end")
        warnings = sorted(self.warnings, key=lambda w: w.line)
        return ScanResult(tuple(self.regions), tuple(warnings))

    def _parse(self, words: list[bytes], line: int) -> tuple[str, str | None] | None:
        """(form, name) of a pragma, form being function, begin or end; None: ignore it."""
        form = "function"
        if words and words[0] in (b"begin", b"end"):
            form, words = words[0].decode(), words[1:]
        elif words and b"=" not in words[0]:
            self.warn(line, f"unknown @optimize word {_show(words[0])}; pragma ignored")
            return None
        name = None
        for pos, word in enumerate(words):
            key, eq, value = _show(word).partition("=")
            if not eq and pos == 0 and form != "function":
                name = key
            elif not eq:
                self.warn(line, f"unknown @optimize word {_show(word)} (ignored)")
            elif not key.isidentifier() or not value or "=" in value:
                self.warn(line, f"malformed key=value {_show(word)} (ignored)")
            elif key != "name":
                self.warn(line, f"unknown @optimize key {key!r} (ignored)")
            else:
                name = value
        return form, name

    def _block(self, begin: tuple[int, str | None], end: int, end_name: str | None) -> None:
        index, name = begin
        pragma_line = self.line(self.toks[index][1])
        if end_name is not None and name is not None and end_name != name:
            self.warn(self.line(self.toks[end][1]), f"@optimize end {end_name!r} closes {name!r}")
        start_line = self.line(self.toks[index][2] - 1) + 1
        end_line = self.line(self.toks[end][1]) - 1
        self._add("block", name or f"block_L{pragma_line}", pragma_line, start_line, end_line)

    def _function(self, index: int, name: str | None) -> int:
        """Adds the function region after pragma `index`; returns its closing brace's index."""
        pragma_line = self.line(self.toks[index][1])
        found = _Definition(self.src, self.toks, self.pragmas).find(index + 1)
        if isinstance(found, str):
            self.warn(pragma_line, found)
            return -1
        found_name, close = found
        end_line = self.line(self.toks[close][1])
        self._add("function", name or found_name, pragma_line, self._first_line(index), end_line)
        return close

    def _first_line(self, index: int) -> int:
        """The line after the pragma, or the pragma's own line when code follows it there."""
        _, start, end = self.toks[index]
        last = self.line(end - 1)
        after = self.toks[index + 1] if index + 1 < len(self.toks) else (COMMENT, 0, 0)
        code_follows = after[0] not in (COMMENT, UNTERMINATED) and self.line(after[1]) == last
        return self.line(start) if code_follows else last + 1

    def _add(self, kind: str, name: str, pragma_line: int, start_line: int, end_line: int) -> None:
        if end_line < start_line:
            self.warn(pragma_line, "empty @optimize region is ignored")
            return
        if self.regions and start_line <= self.regions[-1].end_line:
            self.warn(pragma_line, "@optimize region shares a line with the previous one; ignored")
            return
        start = self.starts[start_line - 1]
        end = self.starts[end_line] if end_line < len(self.starts) else len(self.src)
        crossing = self._crossed_conditional(start, end)
        if crossing is not None:
            self.warn(
                pragma_line,
                f"@optimize region crosses the #{crossing[1]} on line {crossing[0]}: it begins in "
                "one branch of a preprocessor conditional and ends in another, so preprocessed "
                "it always loses one of its ends and no rewrite of it can be verified; tag the "
                "whole #if ... #endif instead",
            )
        digest = sha256(self.src[start:end].replace(b"\r\n", b"\n")).hexdigest()
        name = self._unique(name, pragma_line)
        span = RegionSpan(name, kind, pragma_line, start_line, end_line, start, end, digest)
        self.regions.append(span)

    def _crossed_conditional(self, start: int, end: int) -> tuple[int, str] | None:
        """(line, directive) of the `#elif`/`#else` between `start` and `end` that takes the
        region from the branch it begins in into another branch of the same conditional, where
        it ends: at most one of the two is compiled, so preprocessed the region always loses an
        end. None otherwise (a region may hold whole conditionals, and one that begins in a branch
        and ends after its `#endif` keeps both ends whenever that branch is compiled)."""
        depth = 0
        switched: tuple[int, str] | None = None
        for token in self.directives:
            if not start <= token[1] < end:
                continue
            name = conditional(self.src, token)[0].decode("ascii", "replace")
            if name.startswith("if"):
                depth += 1
            elif name == "endif" and depth:
                depth -= 1
            elif name == "endif":
                switched = None  # out of that conditional: the end is after it
            elif name in ("elif", "else") and not depth:
                switched = (self.line(token[1]), name)
        return switched

    def _unique(self, name: str, line: int) -> str:
        count = self.names.get(name, 0) + 1
        self.names[name] = count
        if count == 1:
            return name
        renamed = f"{name}#{count}"
        self.warn(line, f"duplicate region name {name!r}; this one is named {renamed!r}")
        return renamed


def _show(word: bytes) -> str:
    return word.decode("utf-8", errors="replace")


class _Definition:
    """Finds the function definition that follows a pragma: its name and closing brace."""

    def __init__(self, src: bytes, toks: list[Token], pragmas: dict[int, list[bytes]]) -> None:
        self.src = src
        self.toks = toks
        self.pragmas = pragmas

    def punct(self, i: int) -> int:
        """The punctuation byte of token `i`, or -1 for any other token."""
        if 0 <= i < len(self.toks) and self.toks[i][0] == PUNCT:
            return self.src[self.toks[i][1]]
        return -1

    def word(self, i: int) -> bytes:
        """The text of token `i` if it is an identifier (not a number), else b""."""
        if 0 <= i < len(self.toks) and self.toks[i][0] == WORD:
            _, start, end = self.toks[i]
            return b"" if self.src[start] in b"0123456789." else self.src[start:end]
        return b""

    def find(self, i: int) -> tuple[str, int] | str:
        """(name, closing brace index) of the definition from token `i` on, or a warning."""
        depth = 0
        groups: list[int] = []  # '(' at depth 0: the parameter list is one of them
        operator: tuple[str, int] | None = None
        initializers = False  # inside a constructor's `: a(x), b{y}` list
        while i < len(self.toks):
            if i in self.pragmas:
                return "another @optimize pragma comes before a function definition"
            if depth == 0 and self.word(i) == b"template":
                i = self._skip_template(i + 1)
                continue
            if depth == 0 and self.word(i) == b"operator":
                operator = self._operator(i)
                i = operator[1]
                continue
            c = self.punct(i)
            if c == 40:  # (
                if depth == 0 and not initializers:
                    groups.append(i)
                depth += 1
            elif c == 41:  # )
                depth = max(depth - 1, 0)
            elif depth == 0 and c in (59, 125):  # ; }
                return _NOT_DIRECTLY_ABOVE
            elif depth == 0 and c == 58 and groups and not self._scope(i):  # :
                initializers = True
            elif depth == 0 and c == 123:  # {
                if initializers and (self.word(i - 1) or self.punct(i - 1) == 62):
                    close = self.match(i)
                    i = close + 1 if close >= 0 else len(self.toks)
                    continue
                return self._body(i, groups, operator)
            i += 1
        return "@optimize is followed by no function definition"

    def _body(self, i: int, groups: list[int], op: tuple[str, int] | None) -> tuple[str, int] | str:
        name = op[0] if op is not None and op[1] in groups else self._pick_name(groups)
        if not name:
            return _NOT_DIRECTLY_ABOVE
        close = self.match(i)
        if close < 0:
            return "the function after @optimize has unbalanced braces"
        return name, close

    def match(self, i: int) -> int:
        """Index of the `}` matching the `{` at `i`, or -1."""
        depth = 0
        for j in range(i, len(self.toks)):
            c = self.punct(j)
            depth += (c == 123) - (c == 125)
            if depth == 0:
                return j
        return -1

    def _scope(self, i: int) -> bool:
        """Whether the `:` at `i` is half of a `::`."""
        at = self.toks[i][1]
        return self.src[at + 1 : at + 2] == b":" or self.src[at - 1 : at] == b":"

    def _skip_template(self, i: int) -> int:
        """Index after `<...>` of a template header starting at `i` (`i` if none)."""
        if self.punct(i) != 60:
            return i
        angle = paren = 0
        for j in range(i, len(self.toks)):
            c = self.punct(j)
            paren += (c in (40, 91)) - (c in (41, 93))
            if paren == 0 and c in (123, 59):
                return j
            if paren == 0:
                angle += (c == 60) - (c == 62)
            if angle == 0:
                return j + 1
        return len(self.toks)

    def _operator(self, i: int) -> tuple[str, int]:
        """`operator...` at `i`: its name and the index of its parameter list's `(`."""
        name = "operator"
        j = i + 1
        if self.punct(j) == 40 and self.punct(j + 1) == 41:
            name, j = "operator()", j + 2
        while j < len(self.toks) and self.punct(j) not in (40, 59, 123):
            _, start, end = self.toks[j]
            name += (" " if self.word(j) else "") + _show(self.src[start:end])
            j += 1
        return name, j

    def _pick_name(self, groups: list[int]) -> str:
        """The defined function's name: the last callee-like word, ALL_CAPS macros last."""
        names = [n for n in (self._callee(g) for g in groups) if n]
        lower = [n for n in names if any(ch.islower() for ch in n.split("::")[-1])]
        return (lower or names or [""])[-1]

    def _callee(self, paren: int) -> str:
        """`[A::]name[<args>]` written just before the `(` at `paren`, if it is a name."""
        j = paren - 1
        args = ""
        if self.punct(j) == 62:
            opening = self._angle_start(j)
            args = "".join(_show(self.src[t[1] : t[2]]) for t in self.toks[opening:paren])
            j = opening - 1
        word = self.word(j)
        if not word or word in _NOT_NAMES:
            return ""
        name = _show(word) + args
        while self.punct(j - 1) == 58 and self.punct(j - 2) == 58 and self.word(j - 3):
            j -= 3
            name = f"{_show(self.word(j))}::{name}"
        return ("~" if self.punct(j - 1) == 126 else "") + name

    def _angle_start(self, j: int) -> int:
        depth = 0
        while j > 0:
            c = self.punct(j)
            depth += (c == 62) - (c == 60)
            if depth == 0:
                return j
            j -= 1
        return 0


def region_text(source: bytes, span: RegionSpan) -> str:
    """The region's text for display and diffs (UTF-8 with replacement, LF line ends)."""
    raw = source[span.start_offset : span.end_offset]
    return raw.replace(b"\r\n", b"\n").decode("utf-8", errors="replace")


def scan(source: bytes) -> ScanResult:
    """All `@optimize` regions of `source`, with warnings for malformed or unmatched pragmas."""
    skip = bom_length(source)
    if not skip:
        return _Walker(source).run()
    result = _Walker(source[skip:]).run()
    regions = tuple(
        r.replace(start_offset=r.start_offset + skip, end_offset=r.end_offset + skip)
        for r in result.regions
    )
    return ScanResult(regions, result.warnings)
