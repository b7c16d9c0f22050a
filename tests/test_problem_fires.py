"""benchmarks/problem_fires.py on a problem set written here: a kernel tagged in a header, a pair
(left out), and a region the transforms cannot change."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "problem_fires.py"

SCALE = """\
#pragma once
// @optimize
__global__ void scale(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = 2.0f * in[i];
}
// @end
"""
MAIN = """\
#include "kernels.h"
void run(const float* a, float* b, int n) { scale<<<(n + 255) / 256, 256>>>(a, b, n); }
"""
EMPTY = "// @optimize\n__global__ void nothing() {}\n// @end\n"


def _problem(root: Path, name: str, kind: str, files: dict[str, str]) -> dict[str, str]:
    app = root / "problems" / name
    app.mkdir(parents=True)
    for file, text in files.items():
        (app / file).write_text(text)
    return {"id": name, "app": f"problems/{name}", "kind": kind}


def test_every_transform_is_counted_on_the_regions_of_a_set(tmp_path: Path) -> None:
    rows = [
        _problem(tmp_path, "scale", "single", {"kernels.h": SCALE, "main.cu": MAIN}),
        _problem(tmp_path, "pair", "pair", {"kernels.h": SCALE, "main.cu": MAIN}),
        _problem(tmp_path, "nothing", "single", {"main.cu": EMPTY}),
    ]
    (tmp_path / "train.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "fires.json"
    done = subprocess.run(
        [sys.executable, str(SCRIPT), str(tmp_path), "--out", str(out)],
        capture_output=True,
        text=True,
        check=True,
        cwd=ROOT,
    )
    assert done.stdout.startswith("2 regions of 3 problems (pairs left out)")
    found = json.loads(out.read_text())
    assert set(found) == {"scale:kernels.h:scale", "nothing:main.cu:nothing"}
    assert found["scale:kernels.h:scale"]["ldg"].startswith("fires")  # launched in main.cu
    assert found["scale:kernels.h:scale"]["unroll"] == "refused: no pattern"
    assert "regions where no transform fires: 1 of 2" in done.stdout


def test_the_command_line_macros_of_a_generated_cmake_build(tmp_path: Path) -> None:
    sys.path.insert(0, str(SCRIPT.parent))
    try:
        from problem_fires import compile_definitions
    finally:
        sys.path.remove(str(SCRIPT.parent))
    (tmp_path / "CMakeLists.txt").write_text(
        'target_compile_definitions(main PRIVATE dfloat=double "LABEL=a b" dlong=int)\n'
        "add_definitions(-DBLOCK=64)\nadd_compile_definitions(TILE=8)\n"
    )
    found = compile_definitions(tmp_path)
    assert found == {"dfloat": "double", "LABEL": "a b", "dlong": "int", "BLOCK": "64", "TILE": "8"}
    assert compile_definitions(tmp_path / "missing") == {}
