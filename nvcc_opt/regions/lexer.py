"""A small C/C++/CUDA tokenizer, and which tokens lie in preprocessor branches worth reading.

Comments, string/char/raw-string literals and whole preprocessor lines are single tokens, so
braces and `@optimize` inside them never count. Pure; no input makes these functions raise.
"""

from __future__ import annotations

COMMENT = 0
STRING = 1  # string or char literal, raw strings included
DIRECTIVE = 2  # a whole preprocessor line, continuations and comments included
WORD = 3  # identifier, keyword or number
PUNCT = 4  # a single byte of punctuation
UNTERMINATED = 5  # a block comment or raw string that runs to the end of the input

Token = tuple[int, int, int]  # (kind, start offset, end offset)

BOM = b"\xef\xbb\xbf"  # a UTF-8 byte order mark: the compiler skips it at the start of a file


def bom_length(source: bytes) -> int:
    """3 when `source` starts with a UTF-8 byte order mark, else 0."""
    return len(BOM) if source.startswith(BOM) else 0


_SPACE = frozenset(b" \t\r\n\f\v")
_RAW_PREFIXES = frozenset((b"R", b"LR", b"uR", b"UR", b"u8R"))
_BAD_RAW_DELIM = frozenset(b' ()\\\t\v\f\r\n"')


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


_READ = 0  # a branch whose braces count
_SKIPPED = 1  # a later branch skipped because the one before it left braces unbalanced
_DEAD = 2  # `#if 0` and the like: code switched off
_OPENERS = frozenset((b"if", b"ifdef", b"ifndef"))
_ALTERNATIVES = frozenset((b"elif", b"else", b"elifdef", b"elifndef"))


class _Conditional:
    __slots__ = ("outer", "depth", "chosen", "single", "settled")

    def __init__(self, outer: int, depth: int) -> None:
        self.outer = outer  # how the text around the conditional is read
        self.depth = depth  # brace depth at its `#if`
        self.chosen = False  # a branch has been read
        self.single = False  # a read branch changed the brace depth: read no further branch
        self.settled = False  # an `#if 1` branch was read: the others are switched off


class _Branches:
    """Follows `#if`/`#elif`/`#else`/`#endif` the way universal-ctags does for C++."""

    def __init__(self) -> None:
        self.stack: list[_Conditional] = []
        self.mode = _READ
        self.depth = 0  # braces opened minus closed in read tokens inside conditionals

    def directive(self, name: bytes, constant: bytes) -> None:
        if name in _OPENERS:
            self.stack.append(_Conditional(self.mode, self.depth))
            self.mode = self._next_branch(constant)
        elif name in _ALTERNATIVES and self.stack:
            self.mode = self._next_branch(constant)
        elif name == b"endif" and self.stack:
            self.mode = self.stack.pop().outer

    def _next_branch(self, constant: bytes) -> int:
        frame = self.stack[-1]
        if frame.outer != _READ:
            return frame.outer
        if constant == b"0" or frame.settled:
            return _DEAD
        if frame.chosen:
            # Branches that each leave the depth alone can all be read (two whole definitions,
            # say); after one that opens or closes a brace, another would count it twice.
            frame.single = frame.single or self.depth != frame.depth
            if frame.single:
                return _SKIPPED
        frame.chosen = True
        frame.settled = constant == b"1"
        return _READ


def conditional(src: bytes, token: Token) -> tuple[bytes, bytes]:
    """A conditional directive's name and its condition when that is one token (`0`, `X`)."""
    body = src[token[1] + 1 : token[2]]
    if not body.lstrip().startswith((b"if", b"el", b"endif")):
        return b"", b""
    words = [body[s:e] for kind, s, e in tokenize(body) if kind not in (COMMENT, UNTERMINATED)]
    if not words:
        return b"", b""
    return words[0], words[1] if len(words) == 2 and words[0] in (b"if", b"elif") else b""


def read_branches(src: bytes, tokens: list[Token]) -> tuple[list[Token], list[Token]]:
    """(tokens to read, tokens skipped for unbalanced braces) of `src`'s preprocessor branches.

    As ctags does: every branch of a conditional is read while each leaves the brace depth as
    it found it; once one changes it, the later branches are skipped. `#if 0` branches (and those
    after a read `#if 1`) are in neither list: they are switched-off code.
    """
    branches = _Branches()
    read: list[Token] = []
    skipped: list[Token] = []
    start = 0
    directives = [i for i, token in enumerate(tokens) if token[0] == DIRECTIVE]
    for end in [*directives, len(tokens) - 1]:
        segment = tokens[start : end + 1]  # one branch's tokens up to and including a directive
        if branches.mode == _READ:
            read.extend(segment)
            if branches.stack:  # depth only matters between an `#if` and its `#endif`
                branches.depth += _brace_balance(src, segment)
        elif branches.mode == _SKIPPED:
            skipped.extend(segment)
        if segment and segment[-1][0] == DIRECTIVE:
            branches.directive(*conditional(src, segment[-1]))
        start = end + 1
    return read, skipped


def _brace_balance(src: bytes, tokens: list[Token]) -> int:
    return sum((src[s] == 123) - (src[s] == 125) for kind, s, _ in tokens if kind == PUNCT)
