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


def test_words_passed_on_to_other_tools_are_not_nvccs() -> None:
    words = ["nvcc", "-Xcompiler", "-DHOST=1", "--compiler-options", "-DH2", "-Xptxas", "-v"]
    assert defines([*words, "-DDEV=1", "-D"]) == {"DEV": "1"}  # a -D with no value after it
    assert defines(["nvcc", "-Dbad-name=1", "-D=3", "-D9x=1"]) == {}


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
