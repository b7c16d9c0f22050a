"""The work folder: a tagged private copy of the user's cuda/src, nvcc-opt.toml, and a CMake
build of it (this folder's CMakeLists.txt) through nvcc-opt as the CUDA compiler launcher.

    WORK/src/            cuda/src copied (only files that changed are rewritten), lulesh.cu tagged
    WORK/build/          cmake -S integration/lulesh -B WORK/build -DLULESH_SRC=WORK/src
                         -DCMAKE_CUDA_COMPILER_LAUNCHER=nvcc-opt (accepted rewrites applied)
    WORK/build-baseline/ the same without the launcher: the original, whatever the store holds
    WORK/nvcc-opt.toml   the nvcc-opt project: its root is WORK, so the model's file tools see
                         the copy and nothing else; the store is WORK/store.db

The user's checkout is only read. (`tag --in-place` tags the checkout itself, reversibly.)
"""

from __future__ import annotations

import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

from integration.lulesh import tagging
from integration.lulesh.checkout import Checkout
from integration.lulesh.output import CHECKED
from nvcc_opt.workspace.runner import Runner

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
ENERGY_RTOL = 1e-5
# On the scale-free symmetry figures (output.py). Measured on an H100 (benchmarks/results/
# gpu-2026-12-06-b): double-precision runs, the original and rewrites that change the last bits,
# give MaxRelDiff 5e-14 to 9e-12 and absolute differences per origin energy below 1e-15 (-s 45 to
# the end, -s 60 to the end, -s 120 -i 100 and -i 400, -s 123 -i 100). Single precision would
# put them near 1e-7. 1e-9 sits between: roundoff passes at every size, a lost symmetry fails.
SYMMETRY_ATOL = 1e-9


@dataclass(frozen=True)
class Problem:
    size: int = 45  # the paper: 120
    iters: int = -1  # -1: to LULESH's stop time
    timeout_s: float = 600.0
    gpu: str = "0"  # CUDA_VISIBLE_DEVICES of every run: one GPU for baseline and optimized


class StepError(RuntimeError):
    """A step failed; the message names the step and its output's last lines."""


def copy_sources(checkout: Checkout, work: Path) -> Path:
    """WORK/src: the checkout's cuda/src, lulesh.cu tagged; unchanged files are not rewritten,
    so an incremental build recompiles only what changed."""
    dest = work / "src"
    dest.mkdir(parents=True, exist_ok=True)
    for item in sorted(checkout.src.iterdir()):
        if not item.is_file():
            continue
        data = item.read_bytes()
        if item.name == "lulesh.cu":
            text = data.decode("utf-8", errors="surrogateescape")
            data = tagging.tag(tagging.untag(text)).encode("utf-8", errors="surrogateescape")
        target = dest / item.name
        if not target.is_file() or target.read_bytes() != data:
            target.write_bytes(data)
    return dest


def toml_text(checkout: Checkout, problem: Problem) -> str:
    """nvcc-opt.toml for WORK; its comments say why each check and tolerance is there."""
    command = [sys.executable, "-m", "integration.lulesh.run_lulesh", "{build}/lulesh",
               "--size", str(problem.size), "--iters", str(problem.iters)]  # fmt: skip
    numbers = ", ".join(f"'{rx}'" for rx in CHECKED)
    fresh = problem.size + 3
    return f"""\
# Written by `python -m integration.lulesh prepare` for {checkout.src}
# (commit {checkout.commit or "unknown"}). Run again to change the problem; edits are overwritten.
store = "store.db"

[build]
dir = "build"
command = "cmake --build {{build}} --target lulesh"

[run]
# LULESH -s {problem.size}{f" -i {problem.iters}" if problem.iters > 0 else ""} through a \
wrapper that adds the main loop's time to 8 digits.
command = {_toml_list(command)}
cwd = "{{work}}"  # LULESH writes xyz.asc (90 MB at -s 120) into the folder it runs in
env = {{ PYTHONPATH = "{REPO}" }}
timeout_s = {problem.timeout_s:g}

[time]
# LULESH's own clock around its main loop (gettimeofday), not process start or mesh setup.
source = "regex"
regex = '(?m)^lulesh_elapsed_s = (\\S+)$'
unit = "s"

[check]
require = ['Run completed:']
forbid = ['(?i)\\bnan\\b', 'Error in cell']
# In order: iteration count (must be equal: rtol 1e-5 of a count below 100000 is < 1), final
# origin energy (printed to 7 digits; reordered floating point over hundreds of steps moves the
# last ones), and the symmetry of energy plane 0, scale free: MaxRelDiff, and MaxAbsDiff and the
# mean pair difference over the origin energy (run_lulesh.py prints those two). A symmetric
# double-precision run keeps them below 1e-11 at every size; atol keeps them near zero.
numbers = [{numbers}]
rtol = {ENERGY_RTOL:g}
atol = {SYMMETRY_ATOL:g}

[gpu]
devices = ["{problem.gpu}"]

[verify]
# LULESH has no seed: fresh inputs are another problem size, never shown while exploring.
fresh_inputs = [["--size", "{fresh}"]]
sanitizer_args = ["--size", "8", "--iters", "5"]
"""


def _toml_list(words: list[str]) -> str:
    quoted = ('"' + w.replace("\\", "\\\\").replace('"', '\\"') + '"' for w in words)
    return "[" + ", ".join(quoted) + "]"


def write_config(checkout: Checkout, work: Path, problem: Problem) -> Path:
    path = work / "nvcc-opt.toml"
    path.write_text(toml_text(checkout, problem), encoding="utf-8")
    return path


def configure(
    runner: Runner, work: Path, launcher: str | None, arch: str = "90", tree: str = "build"
) -> None:
    """Configure WORK/TREE; without a launcher, plain nvcc (the baseline: no store, no rewrite
    applied, whatever the store holds)."""
    src = work / "src"
    argv = ["cmake", "-S", str(HERE), "-B", str(work / tree), "-G", "Ninja",
            f"-DLULESH_SRC={src}", f"-DCMAKE_CUDA_ARCHITECTURES={arch}",
            f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher or ''}"]  # fmt: skip
    step(runner, f"configure {tree}", argv, work, 600)


def build(runner: Runner, work: Path, tree: str = "build") -> Path:
    step(runner, f"build {tree}", ["cmake", "--build", str(work / tree), "--target", "lulesh"],
         work, 3600)  # fmt: skip
    return work / tree / "lulesh"


def keep_binary(binary: Path, work: Path, name: str) -> Path:
    """A copy of the built program that later builds do not overwrite."""
    dest = work / "bin" / name
    dest.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, dest)
    return dest


def step(runner: Runner, name: str, argv: list[str], cwd: Path, timeout_s: float) -> str:
    done = runner.run(argv, cwd=cwd, timeout_s=timeout_s, sandbox=False)
    if not done.ok:
        why = "timed out" if done.timed_out else f"exit status {done.exit_status}"
        tail = "\n".join((done.stdout + done.stderr).strip().splitlines()[-15:])
        raise StepError(f"{name} failed ({why}): {' '.join(argv)}\n{tail}")
    return done.stdout
