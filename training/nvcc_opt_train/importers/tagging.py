"""Find the `__global__` kernels of a CUDA source and tag them with `@optimize` regions.

Kernels are found on the tokens of nvcc-opt's own lexer (comments, strings and switched-off
`#if 0` code never count), and every tag is confirmed by `nvcc_opt.regions.scan.scan`: a tag is
kept only when scan finds exactly the region meant, under the expected name, with no warning.
A single kernel gets `// @optimize` directly above its definition (above its `template <...>`
line); a pair gets one `// @optimize begin A+B` ... `// @optimize end` block spanning both.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass

from nvcc_opt.regions.lexer import (
    BOM,
    COMMENT,
    DIRECTIVE,
    PUNCT,
    STRING,
    UNTERMINATED,
    WORD,
    Token,
    read_branches,
    tokenize,
)
from nvcc_opt.regions.scan import region_text, scan

# Words followed by `(` that never name the kernel being defined.
_NOT_NAMES = frozenset(
    b"__launch_bounds__ __maxnreg__ __cluster_dims__ __attribute__ __declspec alignas __align__"
    b" decltype noexcept".split()
)


@dataclass(frozen=True)
class Kernel:
    """One `__global__` definition: its name, and the lines it spans (1-based, inclusive)."""

    name: str
    file: str  # relative to the benchmark folder
    start_line: int  # its first line (the `template` line when it has one)
    end_line: int  # the line of its closing brace
    own_uses: int  # times its (unqualified) name appears inside its own definition


@dataclass(frozen=True)
class Tagged:
    """A source with one confirmed region: the new bytes, the region's name and text."""

    source: bytes
    region: str
    text: str


class _Tokens:
    def __init__(self, src: bytes) -> None:
        self.src = src
        self.toks: list[Token] = read_branches(src, tokenize(src))[0]

    def text(self, i: int) -> bytes:
        _, start, end = self.toks[i]
        return self.src[start:end]

    def punct(self, i: int) -> int:
        kind, start, _ = self.toks[i]
        return self.src[start] if kind == PUNCT else -1

    def line(self, offset: int) -> int:
        return self.src.count(b"\n", 0, offset) + 1


def find_kernels(file: str, src: bytes) -> tuple[list[Kernel], list[str]]:
    """The kernels defined in `src`, and one line for each definition that cannot be tagged."""
    t = _Tokens(src)
    found: list[tuple[str, int, int]] = []  # name, first token, closing brace token
    problems: list[str] = []
    for i, (kind, start, end) in enumerate(t.toks):
        if kind != WORD or src[start:end] != b"__global__":
            continue
        got = _definition(t, i)
        if got is None:
            continue  # a declaration
        if isinstance(got, str):
            problems.append(f"a kernel in {file} line {t.line(start)}: {got}")
            continue
        name, close = got
        first = _first_token(t, i)
        line_start = src.rfind(b"\n", 0, t.toks[first][1]) + 1
        if src[line_start : t.toks[first][1]].strip():
            problems.append(f"kernel {name} in {file}: its definition does not start a line")
            continue
        found.append((name, first, close))
    kernels = []
    for name, first, close in found:
        word = base_name(name).encode()
        own = sum(1 for i in range(first, close + 1) if t.text(i) == word)
        start, end = t.line(t.toks[first][1]), t.line(t.toks[close][1])
        kernels.append(Kernel(name, file, start, end, own))
    return kernels, problems


def base_name(name: str) -> str:
    """`name` without its `Class::` or `namespace::` qualification."""
    return name.rsplit("::", 1)[-1]


def word_counts(src: bytes) -> Counter[str]:
    """How often each identifier appears in the code of `src`, macro bodies included (a kernel
    is often launched from a #define); comments and strings do not count."""
    code = code_only(src).decode("utf-8", errors="replace")
    return Counter(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", code))


def code_only(src: bytes, strings: bool = False) -> bytes:
    """`src` with comments (and string literals unless `strings`) blanked: same length, newlines
    kept, so offsets still point into `src`."""
    out = bytearray(src)
    blank = (COMMENT, UNTERMINATED) if strings else (COMMENT, STRING, UNTERMINATED)
    for kind, start, end in tokenize(src):
        if kind in blank:
            for i in range(start, end):
                if out[i] != 10:
                    out[i] = 32
    return bytes(out)


def _definition(t: _Tokens, i: int) -> tuple[str, int] | str | None:
    """(name, closing brace index) of the kernel whose `__global__` is token `i`; None for a
    declaration; a reason when it cannot be read. The name is chosen as scan chooses it: the
    last word called like a function before the body, ALL_CAPS macros only when nothing else."""
    depth = 0
    names: list[str] = []
    j = i + 1
    while j < len(t.toks):
        c = t.punct(j)
        if c == 40:  # (
            if depth == 0:
                if t.punct(j - 1) == 62:
                    return "an explicit specialization (name<...>(...)) is not tagged"
                name = _callee(t, j)
                if name:
                    names.append(name)
            depth += 1
        elif c == 41:
            depth = max(depth - 1, 0)
        elif depth == 0 and c == 59:  # ;
            return None
        elif depth == 0 and c == 123:  # {
            lower = [n for n in names if any(ch.islower() for ch in n.split("::")[-1])]
            if not names:
                return "its name could not be read"
            close = _match(t, j)
            return ((lower or names)[-1], close) if close >= 0 else "its braces do not balance"
        j += 1
    return None


def _callee(t: _Tokens, paren: int) -> str:
    """`[A::]name` written just before the `(` at `paren`, if it is a name."""
    j = paren - 1
    if t.toks[j][0] != WORD or t.text(j) in _NOT_NAMES or t.text(j)[:1].isdigit():
        return ""
    name = t.text(j).decode("utf-8", errors="replace")
    while j >= 3 and t.punct(j - 1) == 58 and t.punct(j - 2) == 58 and t.toks[j - 3][0] == WORD:
        j -= 3
        name = f"{t.text(j).decode('utf-8', errors='replace')}::{name}"
    return name


def _match(t: _Tokens, i: int) -> int:
    depth = 0
    for j in range(i, len(t.toks)):
        c = t.punct(j)
        depth += (c == 123) - (c == 125)
        if depth == 0:
            return j
    return -1


def _first_token(t: _Tokens, i: int) -> int:
    """The first token of the declaration holding token `i` (its `template`, `static`...)."""
    first = i
    j = i - 1
    while j >= 0:
        kind = t.toks[j][0]
        if kind == DIRECTIVE or t.punct(j) in (59, 123, 125):
            break
        if kind != COMMENT:
            first = j
        j -= 1
    return first


def _newline(src: bytes) -> bytes:
    return b"\r\n" if b"\r\n" in src else b"\n"


def _insert(src: bytes, inserts: list[tuple[int, bytes]]) -> bytes:
    """`src` with whole lines inserted before the given 1-based lines (line len+1: at the end)."""
    bom = BOM if src.startswith(BOM) else b""  # stays first: the compiler skips it only there
    lines = src[len(bom) :].splitlines(keepends=True)
    if lines and not lines[-1].endswith(b"\n"):
        lines[-1] += _newline(src)
    for line, text in sorted(inserts, reverse=True):
        lines.insert(line - 1, text)
    return bom + b"".join(lines)


def tag_single(src: bytes, kernel: Kernel) -> Tagged | str:
    """`src` with `// @optimize` above `kernel`, confirmed by scan; else the reason."""
    nl = _newline(src)
    tagged = _insert(src, [(kernel.start_line, b"// @optimize" + nl)])
    return _confirm(tagged, kernel.name, "function")


def tag_pair(src: bytes, a: Kernel, b: Kernel) -> Tagged | str:
    """`src` with one block region `A+B` from `a`'s first line to `b`'s last, confirmed."""
    nl = _newline(src)
    name = f"{a.name}+{b.name}"
    inserts = [
        (a.start_line, b"// @optimize begin " + name.encode() + nl),
        (b.end_line + 1, b"// @optimize end" + nl),
    ]
    return _confirm(_insert(src, inserts), name, "block")


def _confirm(tagged: bytes, name: str, kind: str) -> Tagged | str:
    result = scan(tagged)
    if result.warnings:
        first = result.warnings[0]
        return f"scan warns at line {first.line}: {first.message}"
    found = [(r.name, r.kind) for r in result.regions]
    if found != [(name, kind)]:
        return f"scan found {found or 'no region'}, not one {kind} region {name!r}"
    text = region_text(tagged, result.regions[0])
    if not _balanced(text):
        return "the region would cut an #if ... #endif block in two"
    return Tagged(tagged, name, text)


_CONDITIONAL = re.compile(r"^[ \t]*#[ \t]*(if|ifdef|ifndef|endif)\b", re.MULTILINE)


def _balanced(text: str) -> bool:
    """Whether every `#if` in `text` is closed in it and no `#endif` closes one outside."""
    depth = 0
    for word in _CONDITIONAL.findall(text):
        depth += 1 if word != "endif" else -1
        if depth < 0:
            return False
    return depth == 0


_IF = re.compile(rb"^[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)\b", re.MULTILINE)


def unconditional(src: bytes) -> bytes:
    """`src` without the lines inside `#if`/`#ifdef`/`#elif`/`#else` branches."""
    out: list[bytes] = []
    stack: list[bool] = []  # per open conditional: whether its current branch is optional
    for line in src.splitlines(keepends=True):
        match = _IF.match(line)
        word = match.group(1) if match else b""
        if word in (b"if", b"ifdef", b"ifndef"):
            stack.append(word != b"ifndef")
        elif word in (b"elif", b"else") and stack:
            stack[-1] = True
        elif word == b"endif" and stack:
            stack.pop()
        elif not any(stack):
            out.append(line)
    return b"".join(out)
