"""What the CLI tests share: a tagged source file, a compile recorded as the launcher records
it, rewrites added through the store, and the CLI run through click's runner."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from pathlib import Path

from click.testing import CliRunner, Result

from nvcc_opt.cli import cli
from nvcc_opt.records import CompileContext, NewRewrite, RegionSpan
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.store import fast
from nvcc_opt.store.api import Store

KERNELS = """\
#include <cuda_runtime.h>

// @optimize
__global__ void scale(float* x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= a;
}

// @optimize begin pair
__device__ float twice(float v) { return 2.0f * v; }
__global__ void shift(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = twice(x[i]) + 1.0f;
}
// @optimize end
"""

FAST_SCALE = """\
__global__ void scale(float* __restrict__ x, float a, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] = a * x[i];
}
"""

VERSION = "Cuda compilation tools, release 13.0, V13.0.48\nBuild cuda_13.0.r13.0"


def write_source(folder: Path, text: str = KERNELS, name: str = "k.cu") -> Path:
    path = folder / "src" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def spans(file: Path) -> dict[str, RegionSpan]:
    return {span.name: span for span in scan(file.read_bytes()).regions}


def context(file: Path, targets: Sequence[str] = ("sm_90",), **fields: object) -> CompileContext:
    """The context a compile of `file` for `targets` has, as the launcher would record it."""
    base: dict[str, object] = {
        "compiler_version": VERSION,
        "flags": ("-O3", *(f"-arch={t}" for t in targets)),
        "file_hash": hashlib.sha256(file.read_bytes()).hexdigest(),
        "targets": tuple(targets),
    }
    base.update(fields)
    return CompileContext(**base)  # type: ignore[arg-type]


def record(
    db: Path, file: Path, ctx: CompileContext | None = None, output: str = "k.cu.o"
) -> list[str]:
    """Record a compile of `file` exactly as the launcher does; return its command."""
    source = file.read_bytes()
    regions = [(span, region_text(source, span)) for span in scan(source).regions]
    build = file.parent.parent / "build"
    command = ["nvcc", "-O3", "-arch=sm_90", "-c", str(file), "-o", output]
    fast.record_compile(
        str(db), str(file), regions, output, command, str(build), ctx or context(file)
    )
    return command


def propose(db: Path, file: Path, region: str, code: str = FAST_SCALE, **fields: object) -> int:
    """Add a proposed rewrite of the region as it is in `file` now; return its id."""
    values: dict[str, object] = {
        "file": str(file),
        "region_name": region,
        "region_hash": spans(file)[region].text_hash,
        "code": code,
        "origin": "optimize",
    }
    values.update(fields)
    with Store.open(db) as store:
        rewrite, created = store.add_rewrite(NewRewrite(**values))  # type: ignore[arg-type]
    assert created
    return rewrite.id


def invoke(db: Path, *args: str, input: str | None = None) -> Result:
    return CliRunner().invoke(cli, ["--store", str(db), *args], input=input)
