"""Tag a RAJAPerf kernel's Base_CUDA kernels in its `K-Cuda.cpp` (pure: text in, text out).

The region runs from the first `__global__` definition (its `template` and `__launch_bounds__`
lines included) to the end of the last one, between `// @optimize begin NAME` and
`// @optimize end`, so the kernels and any device helpers between them are optimized together.
Inside it, and only there, the macros of the kernel's header are expanded (`macros.Expander`);
the host code and the other variants below keep using the macros untouched. The result is
scanned with nvcc-opt's own region scanner: a region it would not find as written is an error.
"""

from __future__ import annotations

from dataclasses import dataclass

from integration.rajaperf.macros import Defines, Expander
from nvcc_opt.regions.lexer import COMMENT, DIRECTIVE, PUNCT, WORD, conditional, tokenize
from nvcc_opt.regions.scan import scan

NOTE = "// nvcc-opt rajaperf: the Base_CUDA kernels, {header}'s macros expanded (undo: unprepare)"


class TagError(ValueError):
    """The kernel's file cannot be tagged; the message says where and why."""


@dataclass(frozen=True)
class Tagged:
    text: str
    kernels: tuple[str, ...]  # the __global__ functions in the region
    expanded: tuple[str, ...]  # the header's macros the region used, sorted
    first_line: int  # of the original region (1-based), before tagging
    last_line: int


def global_kernels(source: bytes) -> list[tuple[str, int, int]]:
    """(name, first byte of its first line, byte after its last line) of every `__global__`
    function definition, in order."""
    toks = tokenize(source)
    found = []
    for k, (kind, start, end) in enumerate(toks):
        if kind != WORD or source[start:end] != b"__global__":
            continue
        first = k
        while first > 0:
            prev_kind, ps, pe = toks[first - 1]
            if prev_kind in (DIRECTIVE, COMMENT) or (
                prev_kind == PUNCT and source[ps:pe] in (b";", b"}", b"{")
            ):
                break
            first -= 1
        body = _body(source, toks, k)
        if body is None:
            continue
        name, close = body
        line_start = source.rfind(b"\n", 0, toks[first][1]) + 1
        line_end = source.find(b"\n", close)
        found.append((name, line_start, len(source) if line_end < 0 else line_end + 1))
    return found


def _body(source: bytes, toks: list[tuple[int, int, int]], k: int) -> tuple[str, int] | None:
    """(the function's name, offset of its closing brace), or None for a declaration."""
    depth, name = 0, ""
    for j in range(k + 1, len(toks)):
        kind, start, end = toks[j]
        text = source[start:end]
        if (
            kind == WORD
            and depth == 0
            and toks[j + 1 : j + 2]
            and source[toks[j + 1][1] : toks[j + 1][2]] in (b"(", b"<")
        ):
            name = name or ("" if text in _NOT_NAMES else text.decode())
        if kind != PUNCT:
            continue
        if text == b"(":
            depth += 1
        elif text == b")":
            depth -= 1
        elif text == b";" and depth == 0:
            return None
        elif text == b"{" and depth == 0:
            return name, _closing(source, toks, j)
    return None


_NOT_NAMES = frozenset((b"__launch_bounds__", b"__maxnreg__", b"__attribute__", b"alignas"))


def _closing(source: bytes, toks: list[tuple[int, int, int]], j: int) -> int:
    depth = 0
    for kind, start, end in toks[j:]:
        if kind == PUNCT and source[start:end] == b"{":
            depth += 1
        elif kind == PUNCT and source[start:end] == b"}":
            depth -= 1
            if depth == 0:
                return start
    raise TagError("unbalanced braces after a __global__ definition")


def tag(cuda_source: str, defines: Defines, region: str, header: str, where: str) -> Tagged:
    """`cuda_source` with its Base_CUDA kernels tagged as region `region` and the macros of
    `defines` (read from `header`) expanded inside; TagError naming `where` when it cannot."""
    source = cuda_source.encode("utf-8")
    if b"@optimize" in source:
        raise TagError(f"{where}: already holds an @optimize tag")
    kernels = global_kernels(source)
    if not kernels:
        raise TagError(f"{where}: no __global__ kernel (no Base_CUDA variant to tag)")
    start, end = _balanced(source, kernels[0][1], kernels[-1][2])
    first_line = source.count(b"\n", 0, start) + 1
    last_line = source.count(b"\n", 0, end)
    body = source[start:end].decode("utf-8")
    expander = Expander(defines, where)
    expanded = expander.expand(body, line=first_line)
    if not expanded.endswith("\n"):
        expanded += "\n"
    head = source[:start].decode("utf-8")
    tail = source[end:].decode("utf-8")
    opening = f"{NOTE.format(header=header)}\n// @optimize begin {region}\n"
    text = f"{head}{opening}{expanded}// @optimize end\n{tail}"
    result = scan(text.encode("utf-8"))
    names = [r.name for r in result.regions]
    if names != [region] or result.warnings:
        why = "; ".join(f"line {w.line}: {w.message}" for w in result.warnings) or str(names)
        raise TagError(f"{where}: the tagged region is not found as written ({why})")
    return Tagged(
        text=text,
        kernels=tuple(k[0] for k in kernels),
        expanded=tuple(sorted(expander.used)),
        first_line=first_line,
        last_line=last_line,
    )


def _balanced(source: bytes, start: int, end: int) -> tuple[int, int]:
    """[start, end) widened to whole lines and whole `#if ... #endif` blocks wherever it would
    begin in one branch of a conditional and end in another or outside it (FIR-Cuda.cpp defines
    its kernel once under `#if defined(USE_CUDA_CONSTANT_MEMORY)` and once under `#else`). A
    region cut across a conditional loses its begin or end line when it is preprocessed, so the
    allowlist could read none of its candidates. A region already balanced is returned as is."""
    groups: list[tuple[int, int]] = []  # (the #if line's start, the end of its #endif line)
    directives: list[tuple[int, bytes, int]] = []  # (where, kind, its group's index)
    opened: list[tuple[int, int]] = []  # (group index, #if line's start)
    for token in tokenize(source):
        kind = conditional(source, token)[0] if token[0] == DIRECTIVE else b""
        if kind.startswith(b"if"):
            index = len(groups)
            line_start = source.rfind(b"\n", 0, token[1]) + 1
            opened.append((index, line_start))
            groups.append((line_start, len(source)))
        elif kind in (b"elif", b"else", b"endif") and opened:
            index = opened[-1][0]
            if kind == b"endif":
                line_end = source.find(b"\n", token[2])
                groups[index] = (opened.pop()[1], len(source) if line_end < 0 else line_end + 1)
        else:
            continue  # not a conditional, or an #else or #endif without its #if
        directives.append((token[1], kind, index))
    while True:
        depth: list[int] = []
        crossed = None
        for where, kind, index in directives:
            if not start <= where < end:
                continue
            if kind.startswith(b"if"):
                depth.append(index)
            elif not depth or depth[-1] != index:
                crossed = index  # a branch or end of a conditional the region did not open
                break
            elif kind == b"endif":
                depth.pop()
        if crossed is None and depth:
            crossed = depth[0]  # opened inside, closed after the region
        if crossed is None:
            return start, end
        start, end = min(start, groups[crossed][0]), max(end, groups[crossed][1])
