"""The fixture checkout prepared, configured with real CMake, Ninja and nvcc (sm_90) through the
nvcc-opt launcher, and each tagged kernel compiled: the one whose expanded region cannot build
(VOL3D: its Cuda file redefines the header's body macro) is reported and untagged, the others
compile, the CUDA 13 fixes included (without them the fixture does not compile with nvcc 13)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from integration.rajaperf import build as building
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import prepare, tagged_kernels, unprepare
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
