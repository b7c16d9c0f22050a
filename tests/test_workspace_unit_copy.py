"""The region's unit compiled for analysis (compiler_analysis, the verification's object line)
reads the code the build compiles: its copy sits beside the build's (launcher/copy.BESIDE), so a
region cannot pick its code by the files it can look up from where it is compiled. Real nvcc
through the real launcher."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcc_opt.launcher.copy import UNIT_PREFIX, copy_path
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.unit import compile_unit
from tests.conftest import needs_nvcc

pytestmark = [needs_nvcc, pytest.mark.slow]

SOURCE = """\
// @optimize begin k
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
// @optimize end
"""

# `../../candidate.json` is the staged candidate seen from a copy in `work/.nvcc-opt/region.o/`
# (where the unit's copy went before); nothing of that name is there from the build's copy.
PICKS_BY_PLACE = """\
#define PASTE(a, b) a##b
#if PASTE(__has_, include)("../../candidate.json")
__global__ void checker_branch(float* y) { y[0] = 1.0f; }
#else
__global__ void build_branch(float* y) { y[0] = 2.0f; }
#endif
#undef PASTE
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
}
"""


def test_the_unit_is_compiled_beside_the_builds_copy(tmp_path: Path, exe: str) -> None:
    tree = tmp_path / "tree"
    (tree / "obj").mkdir(parents=True)
    (tree / "app.cu").write_text(SOURCE)
    words = ["nvcc", "-arch=sm_90", "-c", "app.cu", "-o", "obj/app.o"]
    entry = {"directory": str(tree), "file": "app.cu", "arguments": words}
    (tree / "compile_commands.json").write_text(json.dumps([entry]))
    region = Region.find(tree / "app.cu", "k")
    work = tmp_path / "work"
    compiled = compile_unit(
        ProcessRunner(), tree, tree / "app.cu", region.text_hash, PICKS_BY_PLACE, [],
        launcher=exe, work=work, timeout_s=300,
    )  # fmt: skip
    assert compiled.ok, compiled.output
    ptx = "\n".join(p.read_text(errors="replace") for p in (work / "keep").glob("*.ptx"))
    assert "build_branch" in ptx and "checker_branch" not in ptx
    folder = Path(copy_path("app.cu", "obj/app.o", str(tree))).parent
    assert (folder / "app.cu").exists()  # the build's copy's name is there, as in the build
    assert not [p for p in folder.iterdir() if p.name.startswith(UNIT_PREFIX)]  # none of ours
    assert not (work / ".nvcc-opt").exists()
