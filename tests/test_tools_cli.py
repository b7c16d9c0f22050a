"""`nvcc-opt tool`: the six tools in the paper's order, their schemas, and calls by hand through
click's runner: file tools on a folder, microbench_code of a host-only program with real nvcc,
benchmark_code and compiler_analysis on the hostapp fixture through the installed launcher."""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner, Result

from nvcc_opt.config import load
from nvcc_opt.tools.analysis import NO_KERNELS
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.catalog import TOOL_NAMES, open_catalog
from nvcc_opt.tools.cli import tool_command
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import PAPER_SIX, needs_nvcc

HOSTAPP = Path(__file__).parent / "fixtures" / "hostapp"
# Host code only, so it runs without a GPU; it shows which GPU the tool gave it.
HOST_PROGRAM = """#include <cstdlib>
#include "nvcc_opt_bench.cuh"

int main() {
    std::vector<double> y(1000, 1.5);
    nvcc_opt::report_checksum("y", y);
    const char* gpu = std::getenv("CUDA_VISIBLE_DEVICES");
    std::printf("gpu=%s\\n", gpu ? gpu : "inherited-none");
    return 0;
}
"""
# The hostapp region with half the passes: correct, and about twice as fast.
HALF = (HOSTAPP / "src" / "work.cu").read_text().split("// @optimize\n", 1)[1]
HALF = HALF.replace("++p)", "p += 2)")


def invoke(*args: str) -> Result:
    return CliRunner().invoke(tool_command, list(args))


@pytest.fixture
def scratch(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temporary folder every tool's scratch goes to, so a test sees what is left."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    return folder


@pytest.fixture
def files_root(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "kernel.cu").write_text("#include <cuda_runtime.h>\n__global__ void k() {}\n")
    (root / "README.md").write_text("Scale a vector.\n")
    return root


@pytest.fixture(scope="module")
def hostapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    """The hostapp fixture configured and built by the user's CMake through the launcher."""
    root = tmp_path_factory.mktemp("hostapp")
    shutil.copytree(HOSTAPP, root, dirs_exist_ok=True)
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    launcher = f"-DCMAKE_CUDA_COMPILER_LAUNCHER={exe}"
    for args in (
        ["cmake", "-S", str(root), "-B", str(root / "build"), "-G", "Ninja", launcher],
        ["cmake", "--build", str(root / "build")],
    ):
        subprocess.run(args, check=True, capture_output=True)
    yield root
    mp.undo()


def test_listing_describes_the_six_tools_in_the_papers_order() -> None:
    listing = invoke()
    assert listing.exit_code == 0
    heads = [block.split("(", 1)[0] for block in listing.output.strip().split("\n\n")]
    assert heads == [*PAPER_SIX, "profile_kernel"]  # the optional one after the six
    assert list(TOOL_NAMES) == PAPER_SIX
    needs = [b.split("(", 1)[0] for b in listing.output.split("\n\n") if "needs --region" in b]
    assert needs == ["benchmark_code", "compiler_analysis", "profile_kernel"]
    assert listing.output.startswith(
        "benchmark_code(code: string, compile_args: list[string] | null = null)\n"
        "    (needs --region FILE:NAME, the region it works on)\n"
    )
    with_region = invoke("--region", "src/k.cu:k")
    assert with_region.exit_code == 0 and "needs --region" not in with_region.output


@pytest.mark.parametrize(
    ("name", "required"),
    [
        ("benchmark_code", ["code"]),
        ("microbench_code", ["source"]),
        ("compiler_analysis", None),
        ("file_viewer", ["path"]),
        ("list_dir", None),
        ("search", ["pattern"]),
    ],
)
def test_schema_of_each_tool_needs_no_project(
    name: str, required: list[str] | None, tmp_path: Path
) -> None:
    out = invoke(name, "--schema", "--root", str(tmp_path))
    assert out.exit_code == 0, out.output
    function = json.loads(out.output)["function"]
    assert function["name"] == name
    assert function["parameters"].get("required") == required
    assert "self" not in function["parameters"]["properties"]


def test_unknown_names() -> None:
    schema = invoke("nope", "--schema")
    assert schema.exit_code == 2
    assert f"choose from {', '.join(PAPER_SIX)}" in schema.output
    called = invoke("benchmark_cod")
    assert called.exit_code == 1
    assert called.output.startswith(
        "error: there is no tool named 'benchmark_cod'. Did you mean benchmark_code?"
    )


def test_file_tools_call_view_and_refuse(files_root: Path, scratch: Path) -> None:
    viewed = invoke(
        "file_viewer", "--args", '{"path": "src/kernel.cu", "end": 1}', "--root", str(files_root)
    )
    assert viewed.exit_code == 0
    assert viewed.output.startswith("[src/kernel.cu: lines 1-1 of 2]\n    1 | #include")
    listed = invoke("list_dir", "--root", str(files_root))
    assert listed.output.startswith("[.: 1 folder, 1 file]\nsrc/ ")
    refused = invoke("list_dir", "--args", '{"path": ".."}', "--root", str(files_root))
    assert refused.exit_code == 1
    assert refused.output.startswith("error: '..' leads outside the project root")
    bad_json = invoke("search", "--args", "{pattern", "--root", str(files_root))
    assert bad_json.exit_code == 1 and "not valid JSON" in bad_json.output
    assert list(scratch.iterdir()) == []


def test_root_defaults_to_the_project_root_above_here(
    files_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (files_root / "nvcc-opt.toml").write_text('[build]\ndir = "src"\n')
    monkeypatch.chdir(files_root / "src")
    out = invoke("search", "--args", '{"pattern": "vector"}')
    assert out.exit_code == 0, out.output
    assert out.output.splitlines()[1:] == ["README.md (1)", "    1 | Scale a vector."]


def test_root_is_the_current_folder_without_a_configuration(
    files_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(files_root / "src")
    out = invoke("list_dir")
    assert out.exit_code == 0 and out.output.startswith("[.: 0 folders, 1 file]\nkernel.cu")


@pytest.mark.parametrize("name", ["benchmark_code", "compiler_analysis"])
def test_region_tools_without_a_region_name_the_option(name: str, files_root: Path) -> None:
    out = invoke(name, "--args", '{"code": "x"}', "--root", str(files_root))
    assert out.exit_code == 2
    assert f"{name} needs --region FILE:NAME" in out.output


def test_a_region_that_is_not_there_is_a_usage_error(files_root: Path) -> None:
    (files_root / "nvcc-opt.toml").write_text('[build]\ndir = "src"\n')
    kernel = files_root / "src" / "kernel.cu"
    missing = invoke("compiler_analysis", "--region", f"{kernel}:k", "--root", str(files_root))
    assert missing.exit_code == 2
    assert "--region" in missing.output and "no single region 'k'" in missing.output
    malformed = invoke("benchmark_code", "--region", str(kernel), "--root", str(files_root))
    assert malformed.exit_code == 2 and "write FILE:NAME" in malformed.output


def test_a_wrong_configuration_is_reported(files_root: Path) -> None:
    (files_root / "nvcc-opt.toml").write_text('[build]\ndir = "nowhere"\n')
    out = invoke("microbench_code", "--args", '{"source": ""}', "--root", str(files_root))
    assert out.exit_code == 1
    assert "nvcc-opt.toml:2: [build] dir:" in out.output


def test_benchmark_close_removes_its_scratch(tmp_path: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n')
    (tmp_path / "k.cu").write_text("// @optimize\n__global__ void k() {}\n")
    region = Region.find(tmp_path / "k.cu", "k")
    with Benchmark(load(tmp_path), region, ProcessRunner(), launcher="nvcc-opt") as bench:
        folder = bench.scratch
        assert folder.is_dir() and bench.scratch == folder
    assert not folder.exists()
    bench.close()  # twice is harmless


def test_catalog_builds_what_the_region_allows(tmp_path: Path, scratch: Path) -> None:
    (tmp_path / "build").mkdir()
    (tmp_path / "nvcc-opt.toml").write_text('[build]\ndir = "build"\n[gpu]\ndevices = ["2"]\n')
    (tmp_path / "k.cu").write_text("// @optimize\n__global__ void k() {}\n")
    with open_catalog(tmp_path) as bare:
        assert bare.toolbox.names == PAPER_SIX[1:2] + PAPER_SIX[3:]
        assert bare.bench is None and bare.microbench.gpu == "2"
    region = Region.find(tmp_path / "k.cu", "k")
    with open_catalog(tmp_path, region, launcher="nvcc-opt") as full:
        assert full.toolbox.names == PAPER_SIX
        assert full.bench is not None and full.bench.region == region
    assert list(scratch.iterdir()) == []


@needs_nvcc
def test_microbench_of_a_host_program_on_the_configured_gpu(
    files_root: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    args = json.dumps({"source": HOST_PROGRAM})
    plain = invoke("microbench_code", "--args", args, "--root", str(files_root))
    assert plain.exit_code == 0, plain.output
    assert "compiled: yes" in plain.output and "ran: exit status 0" in plain.output
    assert "checksum=1500 abssum=1500 n=1000" in plain.output
    assert "gpu=inherited-none" in plain.output
    (files_root / "nvcc-opt.toml").write_text('[build]\ndir = "src"\n[gpu]\ndevices = ["3"]\n')
    configured = invoke("microbench_code", "--args", args, "--root", str(files_root))
    assert configured.exit_code == 0 and "gpu=3" in configured.output
    assert list(scratch.iterdir()) == []


@needs_nvcc
@pytest.mark.slow
def test_benchmark_code_through_the_cli(
    hostapp: Path, scratch: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(hostapp)
    out = invoke(
        "benchmark_code", "--args", json.dumps({"code": HALF}), "--region", "src/work.cu:accumulate"
    )
    assert out.exit_code == 0, out.output
    assert "compiled: yes" in out.output and "correct: yes" in out.output
    assert "verdict: improved" in out.output, out.output
    assert list(scratch.iterdir()) == []


@needs_nvcc
@pytest.mark.slow
def test_compiler_analysis_through_the_cli(hostapp: Path, scratch: Path) -> None:
    region = f"{hostapp / 'src' / 'work.cu'}:accumulate"
    root = ["--root", str(hostapp), "--region", region]
    host_only = invoke("compiler_analysis", *root)
    assert host_only.exit_code == 0 and host_only.output.strip() == NO_KERNELS
    kernel = "__global__ void twice(double* x) { x[threadIdx.x] *= 2.0; }\n" + HALF
    analysed = invoke("compiler_analysis", "--args", json.dumps({"code": kernel}), *root)
    assert analysed.exit_code == 0, analysed.output
    assert "twice" in analysed.output and "registers" in analysed.output
    broken = invoke("compiler_analysis", "--args", json.dumps({"code": kernel + "}"}), *root)
    assert broken.exit_code == 1 and "does not compile" in broken.output
    assert list(scratch.iterdir()) == []
