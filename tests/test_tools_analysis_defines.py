"""The macros a build gives on the command line: read from the compile command as nvcc reads
them, named by compiler_analysis where the region uses them, and used for launch shapes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from nvcc_opt.config import load
from nvcc_opt.search.observe import read_analysis
from nvcc_opt.tools.analysis import Analysis
from nvcc_opt.tools.bench import Benchmark
from nvcc_opt.tools.region import Region
from nvcc_opt.workspace.defines import defines, used
from nvcc_opt.workspace.runner import ProcessRunner
from tests.conftest import needs_nvcc
from tests.test_tools_analysis import _project


def test_every_spelling_in_command_order() -> None:
    words = ["nvcc", "-DA=1", "-D", "B=two", "--define-macro=C", "--define-macro", "D=4,E=5"]
    words += ["-DF=", "-UB", "--undefine-macro", "E", "-DA=9", "-c", "x.cu"]
    # the last word for a name wins, -DNAME means 1, a list is split at commas (nvcc -E shows it)
    assert defines(words) == {"A": "9", "C": "1", "D": "4", "F": ""}


def test_the_host_compilers_macros_reach_device_code_under_nvccs_own() -> None:
    # nvcc 13.0: `-Xcompiler -DFOO=7` is seen by device code; nvcc's own -D/-U override it
    words = ["nvcc", "-Xcompiler", "-DHOST=1,-DBOTH=7", "--compiler-options=-DH2"]
    words += ["-DBOTH=2", "-Xcompiler=-UGONE", "-Xptxas", "-DNOT_A_MACRO", "-DDEV=1", "-D"]
    assert defines(words) == {"HOST": "1", "H2": "1", "BOTH": "2", "DEV": "1"}
    assert defines(["nvcc", "-Dbad-name=1", "-D=3", "-D9x=1"]) == {}


def test_options_files_are_read_in_place(tmp_path: Path) -> None:
    (tmp_path / "more.rsp").write_text('-DBLOCK=64 "-Dlabel=a b" --options-file inner.rsp')
    (tmp_path / "inner.rsp").write_text("-UGONE -DTILE=8")
    words = ["nvcc", "-DBLOCK=1", "-DGONE", "--options-file", "more.rsp", "-DLAST=1"]
    found = defines(words, tmp_path)
    assert found == {"BLOCK": "64", "label": "a b", "TILE": "8", "LAST": "1"}
    # a file that cannot be read leaves every macro unknown, not half of them
    assert defines(["nvcc", "-DBLOCK=1", "-optf", "missing.rsp"], tmp_path) == {}


def test_a_file_that_decides_a_macro_itself_is_not_told_the_command_lines() -> None:
    found = {"BLOCK": "512", "real": "float", "TILE": "8"}
    code = "#undef real\n#ifndef BLOCK\n#define BLOCK 128\n#endif\n#define TILE 4\n"
    code += "real x[BLOCK][TILE];"
    assert used(found, code) == {"BLOCK": "512"}  # the #ifndef default: the command line's wins


def test_only_the_names_the_code_uses_as_words() -> None:
    found = {"real": "double", "ROWS": "128", "REAL_T": "float"}
    assert used(found, "real x = ROWS; // real_t") == {"real": "double", "ROWS": "128"}


@pytest.fixture(scope="module")
def definesapp(tmp_path_factory: pytest.TempPathFactory, exe: str) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("definesapp")
    mp = pytest.MonkeyPatch()
    mp.setenv("XDG_CACHE_HOME", str(root / "cache"))
    mp.setenv("NVCC_OPT_STORE", str(root / "state" / "store.db"))
    _project("definesapp", root, exe)
    yield root
    mp.undo()


@needs_nvcc
@pytest.mark.slow
def test_compiler_analysis_names_them_and_reads_the_launch_size(definesapp: Path, exe: str) -> None:
    region = Region.find(definesapp / "src" / "main.cu", "scale_rows")
    analysis = Analysis(Benchmark(load(definesapp), region, ProcessRunner(), launcher=exe))
    text = analysis.compiler_analysis()
    line = next(x for x in text.splitlines() if x.startswith("macros the build's command line"))
    # the region uses `real`, ROWS sizes its launch outside it; the file never uses UNUSED_HERE
    assert "real=double" in line and "ROWS=128" in line and "UNUSED_HERE" not in line
    assert "<<<(n + ROWS - 1) / ROWS, ROWS>>>: 128 threads/block" in text
    assert "ld.global.f64" in text  # the real type the command line gave
    assert dict(read_analysis(text).defines) == {"real": "double", "ROWS": "128"}
