"""The fixture checkout prepared, configured with real CMake, Ninja and nvcc (sm_90) through the
nvcc-opt launcher, and each tagged kernel compiled: the one whose expanded region cannot build
(VOL3D: its Cuda file redefines the header's body macro) is reported and untagged, the others
compile, the CUDA 13 fixes included (without them the fixture does not compile with nvcc 13)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from integration.rajaperf import build as building
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import prepare, tagged_kernels, unprepare
from integration.rajaperf.protocol import Options, run_protocol
from tests.conftest import nvcc_available

FIXTURE = Path(__file__).parent / "fixtures" / "rajaperf" / "checkout"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(not nvcc_available() or shutil.which("ninja") is None,
                       reason="needs nvcc and ninja"),
]  # fmt: skip


def test_a_kernel_that_does_not_build_after_expansion_is_reported_and_the_rest_go_on(
    tmp_path: Path, exe: str, store_env: Path
) -> None:
    root = tmp_path / "RAJAPerf"
    shutil.copytree(FIXTURE, root)
    original_vol3d = (root / "src/apps/VOL3D-Cuda.cpp").read_bytes()
    build = tmp_path / "build"
    prepare(root, build)
    command = building.configure_command(root, build, exe)
    assert f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}" in command
    assert "-DCMAKE_CUDA_ARCHITECTURES=90" in command and "Ninja" in command
    building.configure(root, build, exe)
    said: list[str] = []
    failed = building.check_kernels(root, build, tagged_kernels(root), said.append)
    assert list(failed) == ["Apps_VOL3D"]
    assert failed["Apps_VOL3D"].startswith("does not build after macro expansion:")
    assert "vnormq" in failed["Apps_VOL3D"]
    assert said[0].startswith("not tagged Apps_VOL3D")
    assert (root / "src/apps/VOL3D-Cuda.cpp").read_bytes() == original_vol3d
    assert "VOL3D" not in [k.name for k in tagged_kernels(root)]
    assert "Apps_VOL3D" in Ledger(root).info["not_tagged"]
    for name in ("PRESSURE", "ENERGY"):
        assert (build / "CMakeFiles").is_dir()
        assert "@optimize begin" in (root / f"src/apps/{name}-Cuda.cpp").read_text()
    objects = sorted(p.name for p in build.rglob("*-Cuda.cpp.o"))
    assert objects == [
        "ENERGY-Cuda.cpp.o", "POLYBENCH_JACOBI_1D-Cuda.cpp.o", "PRESSURE-Cuda.cpp.o",
        "REDUCE_SUM-Cuda.cpp.o",
    ]  # fmt: skip
    kept = unprepare(root)
    assert all("store" in line or "kept" in line for line in kept)
    assert "@optimize" not in (root / "src/apps/PRESSURE-Cuda.cpp").read_text()


def test_the_cuda_include_folder_is_found_behind_a_wrapper_script(tmp_path: Path) -> None:
    """A module system's or distribution's `nvcc` on PATH is often a script that execs the real
    one: the folder comes from nvcc's own --dryrun, not from where the script lies."""
    real = shutil.which("nvcc")
    assert real is not None
    wrapper = tmp_path / "bin" / "nvcc"
    wrapper.parent.mkdir()
    wrapper.write_text(f'#!/bin/sh\nexec "{Path(real).resolve()}" "$@"\n')
    wrapper.chmod(0o755)
    found = building.nvcc_include(str(wrapper))
    assert found is not None and (found / "cuda_runtime_api.h").is_file()
    assert not str(found).startswith(str(tmp_path))


def test_the_protocol_runs_the_real_optimize_through_the_real_build(
    tmp_path: Path, exe: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A rehearsal of the GPU run with nothing faked but the driver: the fixture prepared,
    configured and built through the launcher (its raja-perf.exe a script that writes the
    driver's reports, FAKE_DRIVER), then the protocol's real `nvcc-opt optimize` with the search
    policy on one kernel: the kernel's own settings are read, its file tools see the checkout,
    compiler_analysis reads the tagged kernels, benchmark_code builds and runs candidates, and
    the run ends with a verdict, not an error."""
    monkeypatch.delenv("NVCC_OPT_STORE", raising=False)  # the checkout's settings name it
    monkeypatch.delenv("NVCC_OPT_ACTIVE", raising=False)
    root = tmp_path / "RAJAPerf"
    shutil.copytree(FIXTURE, root)
    driver = tmp_path / "raja-perf.exe"
    source = FIXTURE.parent / "fake_raja_perf.py"
    driver.write_text(f"#!{sys.executable}\n{source.read_text()}")
    driver.chmod(0o755)
    build = root / "build-nvcc-opt"
    prepare(root, build)
    configure = [*building.configure_command(root, build, exe), f"-DFAKE_DRIVER={driver}"]
    subprocess.run(configure, check=True, capture_output=True)
    building.check_kernels(root, build, tagged_kernels(root), lambda _: None)
    subprocess.run(["cmake", "--build", build, "--target", "raja-perf.exe"], check=True,
                   capture_output=True)  # fmt: skip
    options = Options(
        root, "search?budget_s=20", tmp_path / "out", runs=1, only=("Apps_PRESSURE",),
        timeout_s=300, nvcc_opt=(exe,),
    )  # fmt: skip
    report = run_protocol(options, lambda _: None)
    (row,) = [r for r in report.rows if r.region == "Apps_PRESSURE"]
    assert row.errors == 0 and row.baseline_ms is not None and row.baseline_ms > 0, row.verdict
    kept = json.loads((tmp_path / "out" / "runs" / "Apps_PRESSURE" / "run-1.json").read_text())
    calls = [c for s in json.loads(Path(kept["trace"]).read_text())["steps"] for c in s["calls"]]
    said = {c["name"]: str(c.get("result") or c.get("error")) for c in calls}
    assert "kernel pressurecalc1" in said["compiler_analysis"]
    assert said["benchmark_code"].startswith("compiled: yes\ncorrect: yes\nbaseline: median")
    searched = [str(c.get("result")) for c in calls if c["name"] == "search"]
    if searched:  # the checkout, not the settings' folder: its headers are found
        assert any("src/common/RPTypes.hpp" in r for r in searched), searched
