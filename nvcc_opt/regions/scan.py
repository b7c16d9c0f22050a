"""Find `@optimize` regions in a CUDA source file (pure: bytes in, records out).

A small C++ tokenizer (comments, string/char/raw-string literals, preprocessor lines) feeds a
pragma walker, so braces and `@optimize` inside strings, comments or `#define`s never count.
Problems become warnings; no input makes `scan` raise.
"""

from __future__ import annotations

import hashlib
from bisect import bisect_right

from nvcc_opt.records import RegionSpan, ScanResult, ScanWarning

COMMENT = 0
STRING = 1  # string or char literal, raw strings included
DIRECTIVE = 2  # a whole preprocessor line, continuations and comments included
WORD = 3  # identifier, keyword or number
PUNCT = 4  # a single byte of punctuation
UNTERMINATED = 5  # a block comment or raw string that runs to the end of the input

Token = tuple[int, int, int]  # (kind, start offset, end offset)

_SPACE = frozenset(b" \t\r\n\f\v")
_RAW_PREFIXES = frozenset((b"R", b"LR", b"uR", b"UR", b"u8R"))
_BAD_RAW_DELIM = frozenset(b' ()\\\t\v\f\r\n"')
_NOT_DIRECTLY_ABOVE = "@optimize must be directly above a function definition"
# Words that take a parenthesised argument but never name the function being defined.
_NOT_NAMES = frozenset(
    b"__launch_bounds__ __maxnreg__ __cluster_dims__ __attribute__ __declspec alignas __align__"
    b" decltype noexcept throw requires sizeof alignof static_assert if for while switch catch"
    b" return __device__ __host__ __global__ __forceinline__ __noinline__".split()
)


def _word_table() -> bytes:
    table = bytearray(256)
    for c in b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_$":
        table[c] = 1
    table[0x80:] = b"\x01" * 0x80  # UTF-8 identifiers
    return bytes(table)


_IS_WORD = _word_table()


def _continued(src: bytes, newline: int) -> bool:
    """Whether the newline at `newline` is escaped by a backslash (CRLF aware)."""
    j = newline - 1
    if j >= 0 and src[j] == 13:
        j -= 1
    return j >= 0 and src[j] == 92


def _line_comment_end(src: bytes, i: int) -> int:
    while True:
        nl = src.find(b"\n", i)
        if nl < 0:
            return len(src)
        if not _continued(src, nl):
            return nl
        i = nl + 1


def _quoted_end(src: bytes, i: int, quote: int) -> int:
    """End of a string or char literal; an unterminated one stops at the end of its line."""
    n = len(src)
    j = i + 1
    while j < n:
        c = src[j]
        if c == 92:
            j += 2
        elif c == quote:
            return j + 1
        elif c == 10:
            return j
        else:
            j += 1
    return n


def _raw_end(src: bytes, quote: int) -> int:
    """End of the raw string whose `"` is at `quote`: -1 if it is not one, -2 if unterminated."""
    paren = src.find(b"(", quote + 1, quote + 18)
    if paren < 0 or any(c in _BAD_RAW_DELIM for c in src[quote + 1 : paren]):
        return -1
    closing = b")" + src[quote + 1 : paren] + b'"'
    k = src.find(closing, paren + 1)
    return -2 if k < 0 else k + len(closing)


def _directive_end(src: bytes, i: int) -> int:
    n = len(src)
    j = i + 1
    while j < n:
        c = src[j]
        if c == 10 and not _continued(src, j):
            return j
        if c == 47 and src[j + 1 : j + 2] == b"*":
            k = src.find(b"*/", j + 2)
            j = n if k < 0 else k + 2
        elif c == 47 and src[j + 1 : j + 2] == b"/":
            return _line_comment_end(src, j)
        elif c == 34 or c == 39:
            j = _quoted_end(src, j, c)
        else:
            j += 1
    return n


def _word_end(src: bytes, i: int) -> int:
    """End of an identifier, or of a preprocessing number (`1'000`, `1e+5`) when it starts one."""
    n = len(src)
    j = i + 1
    number = 48 <= src[i] <= 57 or src[i] == 46
    while j < n:
        c = src[j]
        exponent_sign = c in (43, 45) and src[j - 1] in b"eEpP"
        if _IS_WORD[c] or (number and (c == 46 or exponent_sign)):
            j += 1
        elif number and c == 39 and j + 1 < n and _IS_WORD[src[j + 1]]:
            j += 2
        else:
            break
    return j


def _comment_token(src: bytes, i: int) -> Token:
    if src[i + 1] == 47:
        return (COMMENT, i, _line_comment_end(src, i + 2))
    k = src.find(b"*/", i + 2)
    return (UNTERMINATED, i, len(src)) if k < 0 else (COMMENT, i, k + 2)


def _code_token(src: bytes, i: int, line_start: bool) -> Token:
    c = src[i]
    if c == 35 and line_start:
        return (DIRECTIVE, i, _directive_end(src, i))
    if c == 34 or c == 39:
        return (STRING, i, _quoted_end(src, i, c))
    if _IS_WORD[c] or (c == 46 and src[i + 1 : i + 2].isdigit()):
        j = _word_end(src, i)
        if src[j : j + 1] == b'"' and src[i:j] in _RAW_PREFIXES:
            k = _raw_end(src, j)
            if k == -2:
                return (UNTERMINATED, i, len(src))
            if k >= 0:
                return (STRING, i, k)
        return (WORD, i, j)
    return (PUNCT, i, i + 1)


def tokenize(src: bytes) -> list[Token]:
    """C/C++/CUDA tokens of `src`, whitespace dropped; never raises."""
    tokens: list[Token] = []
    n = len(src)
    i = 0
    line_start = True  # only whitespace and comments so far on this line: `#` starts a directive
    while i < n:
        c = src[i]
        if c in _SPACE:
            line_start = line_start or c == 10
            i += 1
            continue
        if c == 47 and src[i + 1 : i + 2] in (b"/", b"*"):
            token = _comment_token(src, i)
        else:
            token = _code_token(src, i, line_start)
            line_start = False
        tokens.append(token)
        i = token[2]
    return tokens


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
        self.toks = tokenize(src)
        self.starts = _line_starts(src)
        self.pragmas: dict[int, list[bytes]] = {}
        for index, token in enumerate(self.toks):
            words = pragma_words(src, token)
            if words is not None:
                self.pragmas[index] = words
        self.regions: list[RegionSpan] = []
        self.warnings: list[ScanWarning] = []
        self.names: dict[str, int] = {}

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
        digest = hashlib.sha256(self.src[start:end].replace(b"\r\n", b"\n")).hexdigest()
        name = self._unique(name, pragma_line)
        span = RegionSpan(name, kind, pragma_line, start_line, end_line, start, end, digest)
        self.regions.append(span)

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
    return _Walker(source).run()
