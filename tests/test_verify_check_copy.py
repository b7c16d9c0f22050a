"""The allowlist reads the code the build compiles: a region cannot pick its code by where it is
preprocessed (verify/check_copy.py) or by its line numbers (preprocess._spliced)."""

from __future__ import annotations

from pathlib import Path

from nvcc_opt.launcher.copy import copy_path
from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.verify.check_copy import PREFIX
from nvcc_opt.verify.preprocess import preprocess
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc

pytestmark = needs_nvcc

SOURCE = """// a kernel
#include <cstdio>

// @optimize begin scale
__global__ void scale(float* x, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) x[i] *= 2.0f;
}
// @optimize end scale
"""


def _preprocess(tmp_path: Path, code: str) -> list[str]:
    source = tmp_path / "k.cu"
    source.write_text(SOURCE)
    data = source.read_bytes()
    span = next(r for r in scan(data).regions if r.name == "scale")
    assert region_text(data, span)
    (tmp_path / "obj").mkdir(exist_ok=True)
    words = ["nvcc", "-c", "k.cu", "-o", "obj/k.o"]
    done = preprocess(words, tmp_path, SOURCE, span, code, runner=ProcessRunner())
    return [side.region for side in done.sides]


def test_line_numbers_are_the_builds(tmp_path: Path) -> None:
    """The build's copy numbers the region's first line as the source does (regions/splice.py);
    a region that tests `__LINE__` is read as the build reads it."""
    start = next(r for r in scan(SOURCE.encode()).regions if r.name == "scale").start_line
    code = f"#if __LINE__ == {start}\nint build_branch;\n#else\nint checker_branch;\n#endif\n"
    for region in _preprocess(tmp_path, code):
        assert "build_branch" in region and "checker_branch" not in region, region


def test_file_lookups_resolve_as_in_the_builds_folder(tmp_path: Path) -> None:
    """`__has_include` (spelled out or pasted) looks in the folder of the file being compiled
    first: the allowlist's copy sits beside the build's, so what the build finds it finds."""
    (tmp_path / "obj").mkdir()
    (tmp_path / "obj" / "only_in_the_build_tree.h").write_text("\n")
    code = (
        "#define PASTE(a, b) a##b\n"
        '#if PASTE(__has_, include)("../../only_in_the_build_tree.h")\n'
        "int build_branch;\n#else\nint checker_branch;\n#endif\n#undef PASTE\n"
    )
    for region in _preprocess(tmp_path, code):
        assert "build_branch" in region and "checker_branch" not in region, region


def test_the_builds_copy_name_is_there_and_no_copy_of_ours_is_left(tmp_path: Path) -> None:
    code = (
        '#if __has_include("k.cu") && !__has_include("nvcc-opt-preprocess.cu")\nint ok;\n#endif\n'
    )
    for region in _preprocess(tmp_path, code):
        assert "int ok;" in region, region
    folder = Path(copy_path("k.cu", "obj/k.o", str(tmp_path))).parent
    assert not [p for p in folder.iterdir() if p.name.startswith(PREFIX)]
