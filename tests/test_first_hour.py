"""A new user's first hour: the README's install section names every dependency and never a bare
launcher, tests/setup_env.sh says what it installs and shows pip's progress, and a test run
names the small-model tests it skipped and the command that enables them."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
README = (REPO / "README.md").read_text(encoding="utf-8")


def _section(title: str) -> str:
    start = README.index(f"\n## {title}\n")
    end = README.find("\n## ", start + 1)
    return README[start:end]


def test_the_install_section_names_every_dependency() -> None:
    project = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    names = [re.split(r"[<>=!~\[ ;]", d, maxsplit=1)[0] for d in project["dependencies"]]
    install = _section("Install").lower()
    assert [n for n in names if n.lower() not in install] == []
    assert "tests/check.sh` takes about 17 minutes on 2 cores" in _section("Install")


def test_the_readme_names_the_launcher_by_absolute_path() -> None:
    bare = re.compile(r'LAUNCHER="?nvcc-opt\b|NVCC="nvcc-opt |APPEND CMAKE_MODULE_PATH /')
    example = (REPO / "examples" / "saxpy-stencil" / "README.md").read_text(encoding="utf-8")
    assert bare.findall(README) == [] and bare.findall(example) == []
    assert "nvcc_opt=$(command -v nvcc-opt)" in README
    assert '-DCMAKE_MODULE_PATH="$(nvcc-opt cmake-dir)"' in README


def test_setup_env_says_what_it_installs_and_shows_progress(tmp_path: Path) -> None:
    """The script against a stand-in interpreter that logs how pip is called (the package index
    is the true edge here)."""
    (tmp_path / "tests").mkdir()
    shutil.copy(REPO / "tests" / "setup_env.sh", tmp_path / "tests" / "setup_env.sh")
    (tmp_path / "requirements-models.txt").write_text("torch\n", encoding="utf-8")
    log = tmp_path / "calls.log"
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$PYTHONWARNINGS|$*" >> {log}\n', encoding="utf-8")
    python.chmod(0o755)
    done = subprocess.run(
        ["bash", tmp_path / "tests" / "setup_env.sh"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "NVCC_OPT_MODELS": "1"},
    )
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stdout.splitlines() if line.startswith("setup_env: ")]
    assert len(said) == 7 and "installing the model packages" in said[2], said
    assert "installing the training package" in said[3], said
    # the newest CMake in a venv of its own; the stand-in makes none, which is said
    assert "installing the newest CMake into .venv/cmake-latest" in said[4], said
    assert "could not install CMake from PyPI" in said[5] and said[6].startswith("setup_env: done")
    calls = log.read_text(encoding="utf-8").splitlines()
    assert any(c.endswith(f"-m venv {tmp_path}/.venv/cmake-latest") for c in calls), calls
    installs = [c for c in calls if " pip install " in f" {c} " and "--upgrade pip" not in c]
    assert len(installs) == 5 and all(" -q " not in f" {c} " for c in installs), installs
    editables = [c for c in installs if " -e " in c]
    assert len(editables) == 2 and editables[1].rstrip().split()[-3].endswith("/training")
    # compat mode (explained in the README) for both editable installs
    assert all(c.startswith("ignore:Compat editable installs|") for c in editables)
    quiet = subprocess.run(
        ["bash", tmp_path / "tests" / "setup_env.sh"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "NVCC_OPT_MODELS": "0"},
    )
    assert "not installing the model packages (NVCC_OPT_MODELS=0)" in quiet.stdout


SKIPPING = """\
import pytest

@pytest.mark.skipif(True, reason="not installed: torch, gguf")
def test_needs_the_model():
    pass

@pytest.mark.skipif(True, reason="nvcc not installed")
def test_needs_nvcc():
    pass

def test_plain():
    pass
"""


def test_the_summary_names_skipped_model_tests_and_how_to_run_them(tmp_path: Path) -> None:
    shutil.copy(REPO / "tests" / "conftest.py", tmp_path / "conftest.py")
    (tmp_path / "test_some.py").write_text(SKIPPING, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_some.py"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "model tests skipped" in done.stdout
    assert "1 tests of the real small model skipped" in done.stdout
    assert "NVCC_OPT_MODELS=1 bash tests/setup_env.sh" in done.stdout
    assert "  test_some.py::test_needs_the_model" in done.stdout
    assert "test_needs_nvcc" not in done.stdout.split("model tests skipped", 1)[1]
