"""The runtime red team (tests/redteam/runtime): cheats that compile and pass the static guards,
built into the example application and run on a GPU. Each must be rejected for the reason its
file name starts with; the honest one must not be. Marked `gpu`: skipped without one."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.verify.final import final_checks
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import gpu_available

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.slow,
    pytest.mark.skipif(not gpu_available(), reason="needs an NVIDIA GPU"),
]

HERE = Path(__file__).parent
EXAMPLE = HERE.parent / "examples" / "saxpy-stencil"
CHEATS = sorted((HERE / "redteam" / "runtime").glob("*.cu"))
ACCEPTABLE = {
    "race": ("numbers_differ", "sanitizer_racecheck", "missing", "exit_status"),
}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLE, root, dirs_exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    subprocess.run(["cmake", "-S", root, "-B", root / "build", "-G", "Ninja", launcher], check=True)
    subprocess.run(["cmake", "--build", root / "build"], check=True, capture_output=True)
    yield root
    mp.undo()


def _bench(project: Path, region: str, exe: str) -> Benchmark:
    source = "update.cu" if region == "pair" else "stencil.cu"
    found = Region.find(project / "src" / source, region)
    return Benchmark(load(project), found, ProcessRunner(), launcher=exe, label=f"red-{region}")


@pytest.mark.parametrize("cheat", CHEATS, ids=[c.stem for c in CHEATS])
def test_runtime_cheat_is_rejected_for_its_reason(project: Path, exe: str, cheat: Path) -> None:
    code = cheat.read_text()
    region = "pair" if "axpy_kernel" in code else "smooth_kernel"
    bench = _bench(project, region, exe)
    notes: list[str] = []
    verdict = bench.evaluate(
        code, [], 6, final_checks(bench.config, bench.runner, bench.gpu, notes)
    )
    expected = cheat.stem.split("__")[0]
    if expected == "honest":
        assert verdict.correct and verdict.status != "rejected", verdict.reasons
        return
    assert verdict.status == "rejected", verdict
    wanted = ACCEPTABLE.get(expected, (expected,))
    assert any(r.startswith(wanted) for r in verdict.reasons), verdict.reasons
