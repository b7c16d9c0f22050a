"""compiler_analysis on kernels whose mangled names hold more than the name (structs by value,
templates, namespaces, operators), demangled by a real demangler, and launches whose block size
is a run-time value: real nvcc, real CMake, the tool end to end."""

from __future__ import annotations

import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.tools import ptxas
from nvcc_opt.tools.analysis import Analysis, demangler_path
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc

APP = Path(__file__).parent / "fixtures" / "namesapp"


@pytest.mark.parametrize(
    ("readable", "base"),
    [
        ("k(Inputs, Data)", "k"),
        ("void physics::smooth<float, 3>(Data, float const*, int)", "smooth"),
        ("void ns::k<thrust::less<int> >(thrust::less<int>)", "k"),
        ("(anonymous namespace)::kernel(float*)", "kernel"),
        ("k(void (*)(int), float*)", "k"),
        ("operator+(float3, float3)", "operator+"),
        ("bool operator< <int>(A<int>, A<int>)", "operator<"),
        ("Foo::bar() const", "bar"),
        ("helper(float const*, int)$1", "helper"),
        ("extern_c_kernel", "extern_c_kernel"),
    ],
)
def test_demangled_base(readable: str, base: str) -> None:
    assert ptxas.demangled_base(readable) == base


def test_mangled_fallback_reads_one_name_of_a_plain_function() -> None:
    # `k(Inputs, Data)`: the parameters' type names are not the kernel's name
    assert ptxas.mangled_base("_Z1k6Inputs4Data") == "k"
    assert ptxas.mangled_base("_ZN7physics6smoothIfLi3EEEv4DataPKT_i") == "smooth"


@needs_nvcc
def test_real_ptxas_names_demangle_to_the_source_kernels(tmp_path: Path) -> None:
    demangler = demangler_path()
    assert demangler is not None, "c++filt or cu++filt is needed beside nvcc"
    done = subprocess.run(
        ["nvcc", "-arch=sm_90", "-std=c++17", "-Xptxas", "-v", "-c", str(APP / "src/kernels.cu")]
        + ["-o", str(tmp_path / "k.o")],
        capture_output=True,
        text=True,
        check=True,
    )
    names = [f.name for f in ptxas.parse_ptxas(done.stderr).functions if f.entry]
    out = subprocess.run([demangler, *names], capture_output=True, text=True, check=True)
    bases = {ptxas.demangled_base(line) for line in out.stdout.splitlines()}
    declared, _ = ptxas.kernels(ptxas.code_only((APP / "src/kernels.cu").read_text()))
    assert bases == {k.name for k in declared} == {"k", "smooth", "shift"}


@pytest.fixture(scope="module")
def namesapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("namesapp")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    shutil.copytree(APP, root, dirs_exist_ok=True)
    configure = ["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja"]
    configure.append(f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}")
    subprocess.run(configure, check=True, capture_output=True)
    yield root
    mp.undo()


def _analyse(root: Path, region: str, exe: str) -> str:
    found = Region.find(root / "src" / "kernels.cu", region)
    return Analysis(Benchmark(load(root), found, ProcessRunner(), launcher=exe)).compiler_analysis()


@needs_nvcc
@pytest.mark.slow
def test_struct_by_value_kernel_is_found_and_its_block_size_is_not_guessed(
    namesapp: Path, exe: str
) -> None:
    text = _analyse(namesapp, "bystruct", exe)
    assert "ptxas compiled none" not in text, text
    assert "kernel k: k(Inputs, Data)" in text
    assert "sm_90: registers " in text
    assert "block size unknown from source (launched as <<<" in text
    assert "a run-time value" in text and "profile_kernel" in text
    assert "threads/block" not in text  # no occupancy at guessed sizes
    assert "registers alone allow up to " in text


@needs_nvcc
@pytest.mark.slow
def test_template_in_a_namespace_and_an_operator_helper(namesapp: Path, exe: str) -> None:
    text = _analyse(namesapp, "templated", exe)
    assert "kernel smooth: void physics::smooth<float, 3>(Data, float const*, int)" in text
    assert "<<<(in.n + 255) / 256, 256>>>: 256 threads/block" in text
    shifted = _analyse(namesapp, "shifted", exe)
    assert "kernel shift: shift(float3*, float3, int)" in shifted
