"""benchmark_code end to end on a real CMake project whose region is host code, so it runs here:
private trees through the launcher, the run script, checks, paired timing and the verdict."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc

pytestmark = [needs_nvcc, pytest.mark.slow]

FIXTURE = Path(__file__).parent / "fixtures" / "hostapp"
ORIGINAL = (FIXTURE / "src" / "work.cu").read_text()
HALF = ORIGINAL.split("// @optimize\n", 1)[1].replace("++p)", "p += 2)")
ONCE = """double accumulate(const double* x, int n, int passes)
{
    double sum = 0.0;
    for (int i = 0; i < n; ++i) {
        sum += x[i] * x[i];
    }
    return passes > 0 ? sum : 0.0;
}
"""
WRONG = HALF.replace("x[i] * x[i]", "x[i]")
BROKEN = HALF.replace("double sum = 0.0;", "double sum = undeclared_thing;")
CACHED = "static double memo = -1.0;\n" + ONCE.replace("return", "memo = sum; return")


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        if path.is_file() and ".ninja" not in path.name:
            h.update(str(path.relative_to(folder)).encode() + path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def bench(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Benchmark]:
    root = tmp_path_factory.mktemp("hostapp")
    shutil.copytree(FIXTURE, root, dirs_exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    for args in (
        [
            "cmake",
            "-S",
            str(root),
            "-B",
            str(root / "build"),
            "-G",
            "Ninja",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}",
        ],
        ["cmake", "--build", str(root / "build")],
    ):
        subprocess.run(args, check=True, capture_output=True)
    config = load(root)
    region = Region.find(root / "src" / "work.cu", "accumulate")
    yield Benchmark(config, region, ProcessRunner(), launcher=exe)
    mp.undo()


def test_honest_speedup_is_improved_and_nothing_of_the_user_changes(bench: Benchmark) -> None:
    root = bench.config.root
    before = (_digest(root / "src"), _digest(root / "build"))
    text = bench.benchmark_code(HALF)
    assert "compiled: yes" in text and "correct: yes" in text
    assert "verdict: improved" in text, text
    assert bench.history[-1]["comparison"]["speedup"] > 1.5
    assert (_digest(root / "src"), _digest(root / "build")) == before


def test_a_candidate_that_cannot_be_faster_stops_early_and_a_faster_one_is_timed_in_full(
    bench: Benchmark,
) -> None:
    """Twice the passes (the same sum, twice the time): no pair of the first four is faster, so
    the rest of the eight are not timed; HALF is faster in every pair and timed in all eight."""
    twice = bench.region.text.replace("p < passes;", "p < 2 * passes;")
    text = bench.benchmark_code(twice)
    assert "verdict: no improvement" in text, text
    assert "candidate: median" in text and "(spread" in text and "4 runs)" in text, text
    assert "not faster: stopped after 4 of 8 pairs, none 1.020x faster" in text, text
    assert bench.history[-1]["comparison"]["speedup"] < 0.7
    text = bench.benchmark_code(HALF)
    assert "verdict: improved" in text and "8 runs)" in text and "8 pairs" in text, text


def test_same_code_is_no_improvement(bench: Benchmark) -> None:
    text = bench.benchmark_code(bench.region.text)
    assert "verdict: no improvement" in text, text


def test_wrong_result_is_rejected_without_timing(bench: Benchmark) -> None:
    text = bench.benchmark_code(WRONG)
    assert "correct: no" in text and "verdict: rejected" in text
    assert "numbers_differ" in text and "speedup" not in text


def test_build_error_names_the_original_file_and_region_line(bench: Benchmark) -> None:
    text = bench.benchmark_code(BROKEN)
    assert "compiled: no" in text and "verdict: rejected" in text
    assert "work.cu" in text and "undeclared_thing" in text


def test_static_guard_rejects_before_building(bench: Benchmark) -> None:
    text = bench.benchmark_code(CACHED)
    assert "verdict: rejected" in text and "guard_static_buffer" in text


def test_speedup_above_the_ceiling_is_held_for_review(bench: Benchmark) -> None:
    text = bench.benchmark_code(ONCE)
    assert "verdict: held for review" in text, text


@pytest.mark.skipif(shutil.which("nvidia-smi") is not None, reason="this machine has a GPU")
def test_without_a_gpu_benchmark_code_says_so(tmp_path: Path, exe: str) -> None:
    """The example needs a GPU to run: here the tool answers with a clear observation."""
    from nvcc_opt.toolbox.schema import Toolbox

    root = tmp_path / "example"
    shutil.copytree(FIXTURE.parents[2] / "examples" / "saxpy-stencil", root)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(tmp_path / "state" / "store.db"))
    try:
        launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
        subprocess.run(
            ["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher], check=True
        )
        subprocess.run(["cmake", "--build", root / "build"], check=True, capture_output=True)
        region = Region.find(root / "src" / "stencil.cu", "smooth_kernel")
        with Benchmark(load(root), region, ProcessRunner(), launcher=exe) as bench:
            answer = Toolbox.from_objects(bench).call("benchmark_code", {"code": region.text})
    finally:
        mp.undo()
    assert answer.startswith("error: no GPU here")
