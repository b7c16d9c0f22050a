"""The red team's static side on any machine: every candidate of tests/redteam/{classes,runtime,
allowlist} judged in the example by the lines that need no GPU (token guards, the allowlist on
the preprocessed code, the compiled objects and PTX: `Benchmark.evaluate` up to its first run,
less the private tree's build, which the code checks do not need). A cheat whose expected
reasons are all static must be refused by one of them; no honest rewrite may be. The run-time
side is tests/test_redteam_gpu.py."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify import guards
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc
from tests.redteam_files import (
    EXAMPLE,
    REGION_SOURCES,
    STATIC,
    all_candidates,
    expectation,
    static_only,
)

pytestmark = [needs_nvcc, pytest.mark.slow]

JUDGED = [p for p in all_candidates() if not expectation(p)[1] or static_only(expectation(p)[1])]


@pytest.fixture(scope="module")
def benches(
    tmp_path_factory: pytest.TempPathFactory, exe: str
) -> Iterator[Callable[[str], Benchmark]]:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True, ignore=shutil.ignore_patterns("build"))
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    for args in (
        ["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja", launcher],
        ["cmake", "--build", str(root / "build")],
    ):
        subprocess.run(args, check=True, capture_output=True)
    made: dict[str, Benchmark] = {}

    def bench(region: str) -> Benchmark:
        if region not in made:
            found = Region.find(root / "src" / REGION_SOURCES[region], region)
            made[region] = Benchmark(load(root), found, ProcessRunner(), launcher=exe)
        return made[region]

    yield bench
    for made_bench in made.values():
        made_bench.close()
    mp.undo()


def static_reasons(bench: Benchmark, code: str) -> list[str]:
    """What the lines before the first run say of `code` (as Benchmark.evaluate orders them)."""
    refused = guards.check(bench.region.text, code, file_text=bench.region.file_text)
    if refused:
        return refused
    baseline = bench.baseline()  # built once: the program's other definitions
    _, tree = bench.trees()  # configured; the code checks compile the unit themselves
    return bench.code_checks().reasons(baseline.build_dir, tree.path, code, [])


@pytest.mark.parametrize("path", JUDGED, ids=[f"{p.parent.name}/{p.stem}" for p in JUDGED])
def test_static_lines_judge_the_candidate(benches: Callable[[str], Benchmark], path: Path) -> None:
    region, expected = expectation(path)
    reasons = static_reasons(benches(region), path.read_text(encoding="utf-8"))
    if not expected:
        assert reasons == [], reasons
    else:
        assert any(r.startswith(STATIC) for r in reasons), f"not refused: {path.name}"


def test_most_cheats_are_refused_before_they_run() -> None:
    cheats = [p for p in all_candidates() if expectation(p)[1]]
    assert len([p for p in cheats if static_only(expectation(p)[1])]) >= 40
