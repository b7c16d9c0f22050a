"""`nvcc-opt train` without the training package installed: one line that says how to install."""

from __future__ import annotations

import subprocess
import sys

BLOCK = (
    "import sys; sys.modules['nvcc_opt_train'] = None; "
    "sys.argv = ['nvcc-opt', 'train', *sys.argv[1:]]; "
    "from nvcc_opt.entry import main; main()"
)


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", BLOCK, *args], capture_output=True, text=True, timeout=120
    )


def test_train_without_the_package_says_how_to_install_it() -> None:
    for args in ((), ("sft", "--help"), ("problems", "OUT", "--from", "suite", "x")):
        done = run(*args)
        assert done.returncode == 1, (args, done.stdout, done.stderr)
        lines = [line for line in done.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, (args, done.stderr)
        assert "pip install ./training" in lines[0]
        assert done.stdout == ""


def test_train_with_the_package_lists_its_commands() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "nvcc_opt", "train", "--help"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for name in ("problems", "baseline", "collect", "student", "sft", "grpo", "eval"):
        assert f"  {name}" in done.stdout
