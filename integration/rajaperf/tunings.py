"""The Base_CUDA tuning a kernel of the user's checkout actually has, read from its header.

Most kernels take the configured block sizes (`integer::make_gpu_block_size_list_type<...>`, with
the build's one size, 256: tuning `block_256`). A few fix their block to the size their algorithm
needs (`integer::list_type<default_gpu_block_size>` with `default_gpu_block_size = Q1D * Q1D`, say):
at 9af20b3 CONVECTION3DPA, DIFFUSION3DPA and MASS3DEA run `block_64` only and MASS3DPA
`block_25`. Asked for `block_256`, the driver runs nothing and writes no timing file, so every
run of those kernels failed (H100, 2026-12-07). The size is evaluated from the header's own
macros, so another version's sizes are read, not assumed.
"""

from __future__ import annotations

import ast
import operator
import re

from integration.rajaperf.macros import Expander, MacroError, read_defines

_FIXED = re.compile(
    r"gpu_block_sizes_type\s*=\s*integer::list_type\s*<\s*default_gpu_block_size\s*>"
)
_DEFAULT = re.compile(r"default_gpu_block_size\s*=\s*([^;]+);")
_OPERATORS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul}


def fixed_block_tuning(header: str, where: str = "<header>") -> str | None:
    """`block_N` when the header fixes its GPU block size to its default N (evaluated from its own
    macros); None when it takes the configured sizes, or the size is not plain arithmetic."""
    if not _FIXED.search(header):
        return None
    found = _DEFAULT.search(header)
    if found is None:
        return None
    try:
        expression = Expander(read_defines(header, where), where).expand(found.group(1))
    except MacroError:
        return None
    expression = re.sub(r"(\d+)[uUlL]+\b", r"\1", expression).strip()
    try:
        size = _integer(ast.parse(expression, mode="eval").body)
    except (SyntaxError, ValueError):
        return None
    return f"block_{size}" if size > 0 else None


def _integer(node: ast.expr) -> int:
    """The value of integer arithmetic (+, -, *, parentheses); ValueError for anything else."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        value: int = _OPERATORS[type(node.op)](_integer(node.left), _integer(node.right))
        return value
    raise ValueError(f"not integer arithmetic: {ast.dump(node)}")
