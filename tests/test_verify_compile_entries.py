"""A file two targets compile with different flags: the allowlist judges the candidate as each
distinct compile of compile_commands.json preprocesses it, so a cheat that shows only under the
second target's flags is refused (before, only the first entry was read). Real nvcc -E."""

from __future__ import annotations

import json
from pathlib import Path

from nvcc_opt.regions.scan import scan
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.compiled import CodeChecks
from nvcc_opt.workspace.runner import ProcessRunner
from nvcc_opt.workspace.unit import compile_commands
from tests.conftest import needs_nvcc

SOURCE = """\
// @optimize begin k
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
#ifdef ALT_PATH
    if (i < n) y[i] *= 2.0f;
#else
    if (i < n) y[i] += 1.0f;
#endif
}
// @optimize end

int main() { return 0; }
"""

ONLY_UNDER_ALT = """\
#ifdef ALT_PATH
__device__ int calls_seen;
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i == 0) calls_seen++;
    if (i < n) y[i] *= 2.0f;
#else
__global__ void k(float* y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i < n) y[i] += 1.0f;
#endif
}
"""

HONEST = """\
__global__ void k(float* __restrict__ y, int n)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
#ifdef ALT_PATH
    y[i] *= 2.0f;
#else
    y[i] += 1.0f;
#endif
}
"""


def _tree(tmp_path: Path) -> Path:
    (tmp_path / "app.cu").write_text(SOURCE, encoding="utf-8")
    plain = ["nvcc", "-arch=sm_90", "-c", "app.cu"]
    entries = [
        {"directory": str(tmp_path), "file": "app.cu", "arguments": [*plain, "-o", "a.o"]},
        {"directory": str(tmp_path), "file": "app.cu", "arguments": [*plain, "-o", "c.o"]},
        {
            "directory": str(tmp_path),
            "file": "app.cu",
            "arguments": [*plain, "-DALT_PATH", "-o", "b.o"],
        },
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries), encoding="utf-8")
    return tmp_path


def _region(tree: Path) -> Region:
    data = (tree / "app.cu").read_bytes()
    return Region(
        file=(tree / "app.cu").resolve(),
        span=next(s for s in scan(data).regions if s.name == "k"),
        text=SOURCE.split("// @optimize begin k\n")[1].split("// @optimize end")[0],
        file_text=data.decode(),
    )


def test_entries_that_differ_only_in_their_output_count_once(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    found = compile_commands(tree / "compile_commands.json", tree / "app.cu")
    assert [words[-1] for words, _ in found] == ["a.o", "b.o"]


@needs_nvcc
def test_a_cheat_under_the_second_targets_flags_is_refused(tmp_path: Path) -> None:
    tree = _tree(tmp_path)
    region = _region(tree)
    checks = CodeChecks(ProcessRunner(), region, "nvcc-opt", 120.0)
    try:
        reasons = checks._allowlist(tree, ONLY_UNDER_ALT, [])
        assert any(
            "calls_seen" in r
            and r.endswith(
                "(under the flags of compile 2 of the 2 distinct ones compile_commands.json "
                "lists for this file)"
            )
            for r in reasons
        ), reasons
        assert checks._allowlist(tree, HONEST, []) == []
    finally:
        checks.close()


@needs_nvcc
def test_the_object_line_reads_every_distinct_compile_too(tmp_path: Path, exe: str) -> None:
    """The object line compiles the candidate as each target does: what only the second
    target's flags compile in is found there (before, only the first entry was compiled)."""
    tree = _tree(tmp_path)
    region = _region(tree)
    checks = CodeChecks(ProcessRunner(), region, exe, 120.0)
    try:
        reasons = checks._objects(tree, tree, ONLY_UNDER_ALT, [], lambda: True)
        assert reasons, "the device variable compiled in under ALT_PATH went unseen"
        assert all(
            r.endswith("lists for this file)") and "compile 2 of the 2" in r for r in reasons
        )
        assert any("calls_seen" in r for r in reasons), reasons
        assert checks._objects(tree, tree, HONEST, [], lambda: True) == []
        assert len(checks._original) == 2  # each compile's original, kept
    finally:
        checks.close()


def test_every_object_of_a_file_is_found_in_each_spelling(tmp_path: Path) -> None:
    """The objects the file's compiles write (excluded from "defined elsewhere"): the entry's
    output, else -o X or --output-file=X; -objtemp is not an output."""
    from nvcc_opt.workspace.unit import objects_of

    d = str(tmp_path)
    entries = [
        {"directory": d, "file": "app.cu", "arguments": ["nvcc", "-c", "app.cu"], "output": "a.o"},
        {"directory": d, "file": "app.cu", "command": "nvcc -objtemp -c app.cu -o b.o"},
        {"directory": d, "file": "app.cu", "arguments": ["nvcc", "--output-file=c.o", "app.cu"]},
        {"directory": d, "file": "other.cu", "arguments": ["nvcc", "-o", "x.o", "other.cu"]},
    ]
    (tmp_path / "compile_commands.json").write_text(json.dumps(entries), encoding="utf-8")
    assert objects_of(tmp_path, tmp_path / "app.cu") == [
        tmp_path / n for n in ("a.o", "b.o", "c.o")
    ]
    (tmp_path / "compile_commands.json").write_text("{not json", encoding="utf-8")
    assert objects_of(tmp_path, tmp_path / "app.cu") == []
