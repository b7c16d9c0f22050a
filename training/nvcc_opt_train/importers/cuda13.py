"""CUDA 13 (CCCL 3) incompatibilities in a source: the mechanical fixes, and the ones that are not.

A fix is applied only where the replacement means exactly what the removed name meant
(`cub::Sum()` is `cuda::std::plus<>()`); each is named so the problem's notes can list it.
Anything else CUDA 13 removed (cudaDeviceProp fields, texture references, warp intrinsics
without `_sync`...) is reported as a blocker: replacing it needs judgement, so the benchmark is
skipped with that reason. Matches inside comments and strings do not count.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from nvcc_opt_train.importers.tagging import code_only, unconditional


@dataclass(frozen=True)
class _Fix:
    pattern: re.Pattern[bytes]
    replacement: bytes
    include: bytes  # the header the replacement needs ("" for none)
    note: str


_FIXES = (
    _Fix(
        re.compile(rb"\bcub::Sum\s*(\(\s*\)|\{\s*\})"),
        b"cuda::std::plus<>()",
        b"<cuda/std/functional>",
        "cub::Sum() -> cuda::std::plus<>()",
    ),
    _Fix(
        re.compile(rb"\bcub::Max\s*(\(\s*\)|\{\s*\})"),
        b"cuda::maximum<>()",
        b"<cuda/functional>",
        "cub::Max() -> cuda::maximum<>()",
    ),
    _Fix(
        re.compile(rb"\bcub::Min\s*(\(\s*\)|\{\s*\})"),
        b"cuda::minimum<>()",
        b"<cuda/functional>",
        "cub::Min() -> cuda::minimum<>()",
    ),
    _Fix(
        re.compile(rb"\bcudaThreadSynchronize\b"),
        b"cudaDeviceSynchronize",
        b"",
        "cudaThreadSynchronize -> cudaDeviceSynchronize",
    ),
)
# nvToolsExt v2 is gone; its header-only v3 has the same API under nvtx3/.
_NVTX = (re.compile(rb"#\s*include\s*[<\"]nvToolsExt\.h[>\"]"), b"#include <nvtx3/nvToolsExt.h>")

_REMOVED_PROP = [
    "clockRate",
    "memoryClockRate",
    "deviceOverlap",
    "kernelExecTimeoutEnabled",
    "computeMode",
    "maxTexture1DLinear",
    "singleToDoublePrecisionPerfRatio",
    "cooperativeMultiDeviceLaunch",
    "cooperativeMultiDeviceUnmatchedFunc",
    "cooperativeMultiDeviceUnmatchedGridDim",
    "cooperativeMultiDeviceUnmatchedBlockDim",
    "cooperativeMultiDeviceUnmatchedSharedMem",
]
_BLOCKERS = (
    (
        re.compile(rb"(?:\.|->)\s*(" + "|".join(_REMOVED_PROP).encode() + rb")\b"),
        "uses cudaDeviceProp::{}, removed in CUDA 13",
    ),
    (re.compile(rb"\b(texture)\s*<"), "uses texture references, removed in CUDA 12"),
    (
        re.compile(rb"\bthrust::(unary_function|binary_function)\b"),
        "uses thrust::{}, removed in CCCL 3",
    ),
    (
        re.compile(rb"\b(__shfl|__shfl_up|__shfl_down|__shfl_xor|__any|__all|__ballot)\s*\("),
        "uses {} without _sync, removed since CUDA 9",
    ),
    (re.compile(rb"\b(CUB_MAX|CUB_MIN)\s*\("), "uses {}, removed in CCCL 3"),
    (
        re.compile(rb"\b(cudaLaunchCooperativeKernelMultiDevice)\b"),
        "uses {}, removed in CUDA 13",
    ),
)
# These take a cudaMemLocation since CUDA 13; an int device needs a rewrite of the call.
_LOCATION_CALLS = re.compile(rb"\b(cudaMemPrefetchAsync|cudaMemAdvise)\s*\(")


def blocker(src: bytes) -> str | None:
    """Why `src` cannot build with CUDA 13 without a judgement call, or None. Code inside
    `#if`/`#ifdef` branches (a HIP path, an old-architecture path) and names the source
    #defines itself do not count."""
    code = code_only(unconditional(src))
    defined = set(re.findall(rb"^[ \t]*#[ \t]*define[ \t]+(\w+)", src, re.MULTILINE))
    for pattern, reason in _BLOCKERS:
        for match in pattern.finditer(code):
            if match.group(1) not in defined:
                return reason.format(match.group(1).decode())
    if _LOCATION_CALLS.search(code) and b"cudaMemLocation" not in code:
        return (
            "passes a device number to cudaMemPrefetchAsync/cudaMemAdvise "
            "(a cudaMemLocation since CUDA 13)"
        )
    return None


def fix(src: bytes) -> tuple[bytes, list[str]]:
    """`src` with the mechanical CUDA 13 fixes applied, and one note per kind of fix made."""
    code = code_only(src)
    notes: list[str] = []
    includes: list[bytes] = []
    for item in _FIXES:
        spans = [m.span() for m in item.pattern.finditer(code)]
        if not spans:
            continue
        for start, end in reversed(spans):
            src = src[:start] + item.replacement + src[end:]
            code = code[:start] + item.replacement + code[end:]
        notes.append(item.note)
        if item.include and item.include not in includes:
            includes.append(item.include)
    pattern, header = _NVTX
    if pattern.search(src):
        src = pattern.sub(header, src)
        notes.append("#include <nvToolsExt.h> -> <nvtx3/nvToolsExt.h>")
    if includes:
        src = _add_includes(src, includes)
    return src, notes


def _add_includes(src: bytes, headers: list[bytes]) -> bytes:
    """`src` with `#include` lines for `headers` at its top (outside every `#if`)."""
    nl = b"\r\n" if b"\r\n" in src else b"\n"
    return b"".join(b"#include " + h + nl for h in headers) + src
