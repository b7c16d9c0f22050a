"""The model's side of a synthetic kernel: what it is asked (the fixed launch contract, an
inspiration snippet and a variation, both picked by the sample's seed, and the format of an
answer) and how its answer is read (`read_reply`: the code, or one line saying why not).

Kept apart from the importer so the contract can be read and changed in one place; it must match
the driver in `data/synthetic/` (kernel.h declares the same `launch`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from nvcc_opt.regions.lexer import COMMENT, DIRECTIVE, UNTERMINATED, tokenize
from nvcc_opt.verify.declarations import Function, Outline, Tok, merge_scopes

LAUNCH_SIGNATURE = "void launch(const float* a, const float* b, float* out, int n)"

# A different, trivial task: it shows the shape of an answer without giving one away. A reply
# that returns it unchanged is refused as a copy (the importer checks).
EXAMPLE_ANSWER = """\
__global__ void add_kernel(const float* a, const float* b, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = a[i] + b[i];
}

void launch(const float* a, const float* b, float* out, int n) {
  add_kernel<<<(n + 255) / 256, 256>>>(a, b, out, n);
}
"""

# One is added to each prompt, so that one snippet leads to more than one kernel.
VARIATIONS = (
    "Make each output depend on several neighbouring inputs.",
    "Combine a and b non-linearly (for example with expf, sqrtf, or a polynomial).",
    "Use shared memory for data that several threads of a block read.",
    "Let each thread loop over a small window of inputs to produce its output.",
    "Treat the arrays as rows of 256 floats (the last row may be shorter) and work per row.",
    "Read the inputs in a different order than the outputs are written (reversed or strided).",
    "Use b to decide, per element, between two different computations.",
    "Use two kernels, the second reading what the first wrote into out.",
)

SYSTEM = (
    "You are an expert CUDA programmer. You answer with one ```cuda code block and nothing else."
)

_TASK = """\
Write a CUDA kernel, and the host function that launches it, for a benchmark whose driver is \
fixed. The driver calls exactly this function, which you must define with this signature:

    {signature};

Rules:
- a, b and out are device arrays of n floats each. n can be any value from 1 to 67108864 and \
is usually not a multiple of your block size: check bounds. The driver fills a with values in \
[-1, 1) and b with values in [0.5, 1.5).
- launch computes out from a and b with one or more __global__ kernels on the default stream. \
It must not allocate memory, synchronize, print, or use other global data.
- Every out element must be finite, out must not be all zero, and the result must be exactly \
the same every time: launch is called many times on the same arrays (never accumulate into out, \
no floating-point atomics whose order changes the result).
- Write a plain, correct first version; it will be optimized later.
- cuda_runtime.h is already included. Do not write main().

Take the idea of this inspiration snippet and adapt it to the arrays above (do not keep its \
signature):

```cuda
{snippet}
```

{variation}

The format of an answer (for a different, trivial task):

```cuda
{example}```

Answer with one ```cuda code block holding your kernel(s) and launch, and nothing else."""


def messages(snippet: str, variation: str) -> list[dict[str, Any]]:
    """The chat a model answers: a system line and the task with its snippet and variation."""
    task = _TASK.format(
        signature=LAUNCH_SIGNATURE,
        snippet=snippet.strip(),
        variation=variation,
        example=EXAMPLE_ANSWER,
    )
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": task}]


# --- reading the answer -----------------------------------------------------------------------

_FENCE = re.compile(r"```[^\n`]*\n(.*?)```", re.DOTALL)
_INCLUDE = re.compile(r"^[ \t]*#[ \t]*include\b.*$", re.MULTILINE)


@dataclass(frozen=True)
class Code:
    """A reply's code, split where the problem's source needs it."""

    includes: tuple[str, ...]  # `#include` lines: they go above the region
    body: str  # the rest: the region's text
    kernels: tuple[str, ...]  # the __global__ functions it defines
    digest: str  # its tokens without comments or spacing: equal digests are the same code


def read_reply(text: str, truncated: bool = False) -> Code | str:
    """The code of a reply, or one line saying why it has none usable. `truncated`: the reply
    stopped at the model's token limit (said in the reason when that cost the code)."""
    blocks = [b for b in _FENCE.findall(text) if b.strip()]
    if not blocks:
        cut = " (the reply stopped at the token limit)" if truncated else ""
        opened = "```" in text
        return f"the ```code block is not closed{cut}" if opened else f"no ```code block{cut}"
    with_kernel = [b for b in blocks if "__global__" in b]
    chosen = next((b for b in with_kernel if "launch" in b), None)
    code = chosen if chosen is not None else "\n".join(blocks)
    functions = _outline(code).functions
    kernels = tuple(dict.fromkeys(f.name for f in functions if "__global__" in f.spaces))
    if not kernels:
        return "the code defines no __global__ kernel"
    if any(f.name == "main" for f in functions):
        return "the code defines main(); the driver has its own"
    launches = [f for f in functions if f.name == "launch" and "__global__" not in f.spaces]
    if not launches:
        return f"no launch function: expected `{LAUNCH_SIGNATURE}`"
    if not any(_EXPECTED.accepts(f) for f in launches):
        return f"wrong signature: `{launches[0].describe()}`, expected `{LAUNCH_SIGNATURE}`"
    includes = tuple(m.group(0).strip() for m in _INCLUDE.finditer(code))
    body = _INCLUDE.sub("", code).strip("\n") + "\n"
    return Code(includes, body, kernels, digest(code))


def digest(code: str) -> str:
    """The code's tokens, comments dropped, joined by single spaces."""
    src = code.encode("utf-8", "replace")
    kept = [src[a:b] for kind, a, b in tokenize(src) if kind not in (COMMENT, UNTERMINATED)]
    return b" ".join(kept).decode("utf-8", "replace")


def _outline(code: str) -> Outline:
    src = code.encode("utf-8", "replace")
    toks = [
        Tok(kind, src[a:b].decode("utf-8", "replace"), 0)
        for kind, a, b in tokenize(src)
        if kind not in (COMMENT, DIRECTIVE, UNTERMINATED)
    ]
    return Outline(merge_scopes(toks))


def _expected_launch() -> Function:
    found = [f for f in _outline(EXAMPLE_ANSWER).functions if f.name == "launch"]
    return found[0]


_EXPECTED = _expected_launch()
EXAMPLE_DIGEST = digest(EXAMPLE_ANSWER)
