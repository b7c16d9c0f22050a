"""The kernels and launch shapes a CUDA source text declares, read with regexes (pure: no I/O):
the `__global__` and `__device__` functions, each kernel's `__launch_bounds__`, and the block size
and dynamic shared memory of each `kernel<<<...>>>` launch when the text makes them constants.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvcc_opt.regions.lexer import COMMENT, STRING, tokenize

_ATTRIBUTES = "__launch_bounds__|__attribute__|__maxnreg__|__cluster_dims__|alignas|decltype"
_GROUP = r"\((?:[^()]|\([^()]*\))*\)"
_DECLARED = (
    r"\b{space}\b(?:[^;{{}}()]|{group})*?"  # return type, attributes, template arguments
    r"\b(?!(?:{attrs})\b)(?P<name>[A-Za-z_]\w*)\s*\("
)
_KERNEL = re.compile(_DECLARED.format(space="__global__", group=_GROUP, attrs=_ATTRIBUTES))
_DEVICE = re.compile(_DECLARED.format(space="__device__", group=_GROUP, attrs=_ATTRIBUTES))
_BOUNDS = re.compile(r"__launch_bounds__\s*\(\s*([^,()]+)")


@dataclass(frozen=True)
class Kernel:
    name: str
    launch_bounds: str | None  # the maximum threads per block, as written


@dataclass(frozen=True)
class Launch:
    block: int | None  # threads per block; None when it is not a constant
    dynamic_shared: int | None  # bytes; None when not a constant
    text: str  # the launch configuration as written


def code_only(text: str) -> str:
    """`text` with comments and string literals blanked (lines and offsets kept)."""
    source = bytearray(text.encode("utf-8", "replace"))
    for kind, start, end in tokenize(bytes(source)):
        if kind in (COMMENT, STRING):
            source[start:end] = bytes(c if c == 10 else 32 for c in source[start:end])
    return source.decode("utf-8", "replace")


def kernels(code: str) -> tuple[list[Kernel], list[str]]:
    """The kernels a (comment-free) text defines or declares, and its device functions' names."""
    found: dict[str, Kernel] = {}
    for match in _KERNEL.finditer(code):
        start = max(code.rfind(c, 0, match.start()) for c in ";{}") + 1
        bounds = _BOUNDS.search(code, start, match.end())
        kernel = Kernel(match["name"], bounds[1].strip() if bounds else None)
        if kernel.name not in found or kernel.launch_bounds:
            found[kernel.name] = kernel
    devices = dict.fromkeys(m["name"] for m in _DEVICE.finditer(code))
    return list(found.values()), [d for d in devices if d not in found]


def launches(code: str, kernel: str) -> list[Launch]:
    """The `kernel<<<grid, block[, shared[, stream]]>>>` launches of a (comment-free) text."""
    pattern = rf"\b{re.escape(kernel)}\s*(?:<(?:[^<>;]|<[^<>;]*>)*>)?\s*<<<(.*?)>>>"
    found = []
    for match in re.finditer(pattern, code, re.DOTALL):
        args = _split_args(match[1])
        block = constant(args[1], code) if len(args) > 1 else None
        shared = constant(args[2], code) if len(args) > 2 else 0
        found.append(Launch(block, shared, "<<<" + " ".join(match[1].split()) + ">>>"))
    return found


def _split_args(text: str) -> list[str]:
    args, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "([{") - (c in ")]}")
        if c == "," and depth == 0:
            args.append(text[start:i])
            start = i + 1
    return [*args, text[start:]]


def constant(expr: str, code: str, depth: int = 0) -> int | None:
    """The value of a launch argument when the text makes it a constant: literals, products,
    `dim3(...)`, and names given one value by `#define`, `const`/`constexpr` or `dim3 x(...)`."""
    expr = " ".join(expr.split())
    if depth > 4 or not expr:
        return None
    if found := re.fullmatch(r"(\d+)[uUlL]*", expr):
        return int(found[1])
    if found := re.fullmatch(r"(?:dim3)?\s*[({](.*)[)}]", expr):
        parts = [constant(p, code, depth + 1) for p in _split_args(found[1]) if p.strip()]
        return _product(parts)
    if "*" in expr:
        return _product([constant(p, code, depth + 1) for p in expr.split("*")])
    if re.fullmatch(r"[A-Za-z_]\w*", expr):
        definitions = _definitions(expr, code)
        values = {constant(d, code, depth + 1) for d in definitions}
        return values.pop() if len(values) == 1 and not _reassigned(expr, code) else None
    return None


def _product(values: list[int | None]) -> int | None:
    result = 1
    for value in values:
        if value is None:
            return None
        result *= value
    return result if values else None


_TYPED = (
    r"(?:(?:static|inline|const|constexpr|unsigned|signed|int|long|short|size_t|auto|"
    r"std::size_t|u?int\d+_t)\s+)+"
)


def _definitions(name: str, code: str) -> list[str]:
    """What the text gives `name`: `#define name X`, `const int name = X`, `dim3 name(X, Y)`."""
    n = re.escape(name)
    defines = re.findall(rf"^\s*#\s*define\s+{n}\s+(.+)$", code, re.MULTILINE)
    defines = [re.sub(r"/[/*].*", "", d) for d in defines]  # a directive keeps its comments
    scalars = re.findall(rf"{_TYPED}{n}\s*(?:=\s*([^;,]+)|\{{([^}}]*)\}})", code)
    dims = re.findall(rf"\bdim3\s+{n}\s*(?:=\s*)?((?:dim3\s*)?[({{][^;]*[)}}])\s*;", code)
    return defines + [a or b for a, b in scalars] + dims


def _reassigned(name: str, code: str) -> bool:
    """Whether `name` is assigned after its definition (a variable, not a constant)."""
    n = re.escape(name)
    assignments = re.findall(rf"\b{n}\s*(?:[-+*/%&|^]|<<|>>)?=(?!=)", code)
    initialised = re.findall(rf"{_TYPED}{n}\s*=", code)
    return len(assignments) > len(initialised) or bool(re.search(rf"\b{n}\s*(\+\+|--)", code))
