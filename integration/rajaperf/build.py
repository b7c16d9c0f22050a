"""Configure and build a prepared checkout: CMake, Ninja, CUDA for sm_90, nvcc-opt as the CUDA
compiler launcher; each tagged kernel's object compiled first, so a kernel whose tagged file does
not compile is reported (and its tag undone) while the others go on.

What the 36 kernels need: RAJAPerf's driver links every group (its kernel table names them all),
so the build cannot leave groups out; it leaves out what it can: OpenMP, Kokkos, tests and RAJA's
examples and exercises, and every GPU block size but the default 256 (the tuning timed), which
cuts the template instantiations of every *-Cuda.cpp.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from integration.rajaperf.fixes import cub_dir
from integration.rajaperf.kernels import Kernel
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import cuda_file, record_not_tagged, untag
from nvcc_opt.workspace.unit import objects_of

ARCH = "90"
BLOCK_SIZE = "256"
ERROR_LINES = 3


class BuildError(RuntimeError):
    """Configure or the whole build failed; the message holds its first error lines."""


def nvcc_include(nvcc: str) -> Path | None:
    """The CUDA include folder nvcc compiles against: from nvcc's own `--dryrun` (its TOP), so a
    wrapper script on PATH (a module system's, a distribution's) does not hide it; else from where
    the nvcc found on PATH lies."""
    found = shutil.which(nvcc)
    if found is None:
        return None
    tops = [Path(found).resolve().parent.parent]
    try:
        dry = _run([found, "--dryrun", "-c", "-x", "cu", os.devnull, "-o", os.devnull], 60)
        told = re.search(r"^#\$ TOP=(.+)$", dry.stdout + dry.stderr, re.MULTILINE)
        if told:
            tops.insert(0, Path(told.group(1).strip()).resolve())
    except (OSError, subprocess.TimeoutExpired):
        pass
    for top in tops:
        for candidate in (top / "include", *sorted(top.glob("targets/*/include"))):
            if (candidate / "cuda_runtime_api.h").is_file():
                return candidate
    return None


def configure_command(root: Path, build: Path, launcher: str, nvcc: str = "nvcc") -> list[str]:
    """The cmake call (CUB_DIR only where CUDA 13 moved CUB, the one fix that is an option)."""
    argv = [
        "cmake", "-S", str(root), "-B", str(build), "-G", "Ninja",
        "-DCMAKE_BUILD_TYPE=Release",
        "-DENABLE_CUDA=On", f"-DCMAKE_CUDA_ARCHITECTURES={ARCH}",
        f"-DCMAKE_CUDA_COMPILER={shutil.which(nvcc) or nvcc}",
        f"-DCMAKE_CUDA_COMPILER_LAUNCHER={launcher}",
        "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON",
        "-DENABLE_OPENMP=Off", "-DENABLE_KOKKOS=Off", "-DENABLE_TESTS=Off",
        "-DRAJA_ENABLE_TESTS=Off", "-DRAJA_ENABLE_EXAMPLES=Off", "-DRAJA_ENABLE_EXERCISES=Off",
        f"-DRAJA_PERFSUITE_GPU_BLOCKSIZES={BLOCK_SIZE}",
    ]  # fmt: skip
    include = nvcc_include(nvcc)
    moved = cub_dir(include) if include is not None else None
    if moved is not None:
        argv.append(f"-DCUB_DIR={moved}")
    return argv


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


def first_errors(output: str) -> str:
    lines = [s.strip() for s in output.splitlines() if "error" in s.lower()]
    return " | ".join(lines[:ERROR_LINES]) or (output.strip().splitlines() or ["no output"])[-1]


def configure(root: Path, build: Path, launcher: str, nvcc: str = "nvcc") -> None:
    done = _run(configure_command(root, build, launcher, nvcc), 1800)
    if done.returncode != 0:
        raise BuildError(f"configure failed: {first_errors(done.stdout + done.stderr)}")


def object_of(build: Path, source: Path) -> str | None:
    """The Ninja target of the object the build tree compiles `source` into (nvcc-opt's reader of
    compile_commands.json), relative to the build tree as build.ninja names it: newer CMake
    writes it absolute, and Ninja knows no absolute target."""
    found = objects_of(build, source)
    if not found:
        return None
    output, real = found[0], build.resolve()
    for out, top in ((output, build), (output, real), (output.resolve(), real)):
        if out.is_relative_to(top):
            return str(out.relative_to(top))
    return str(output)


def check_kernels(
    root: Path,
    build: Path,
    kernels: list[Kernel],
    say: Callable[[str], None] = print,
    timeout: float = 1800,
) -> dict[str, str]:
    """Compile each tagged kernel's object; a kernel whose object fails has its tag and settings
    undone. All objects build in one Ninja call (every core, going on past failures); only those
    left out of date are compiled again one at a time, for their own first errors. Returns
    kernel -> why, for those that failed."""
    failed: dict[str, str] = {}
    targets: dict[str, str] = {}
    for kernel in kernels:
        source = cuda_file(root, kernel)
        target = object_of(build, source)
        if target is None:
            failed[kernel.full_name] = f"the build tree does not compile {source.name}"
        else:
            targets[kernel.full_name] = target
    if targets:
        _run(["ninja", "-C", str(build), "-k", "0", *targets.values()], timeout)
    for name, target in targets.items():
        done = _run(["ninja", "-C", str(build), target], timeout)
        if done.returncode != 0:
            failed[name] = (
                f"does not build after macro expansion: {first_errors(done.stdout + done.stderr)}"
            )
    for kernel in kernels:
        if kernel.full_name not in failed:
            continue
        kept = untag(root, kernel.full_name)
        record_not_tagged(Ledger(root), {kernel.full_name: failed[kernel.full_name]})
        say(f"not tagged {kernel.full_name}: {failed[kernel.full_name]} (its tag was undone)")
        for line in kept:
            say(f"  {line}")
    return failed


def build_all(build: Path, timeout: float = 7200) -> None:
    done = _run(["cmake", "--build", str(build), "--target", "raja-perf.exe"], timeout)
    if done.returncode != 0:
        raise BuildError(f"build failed: {first_errors(done.stdout + done.stderr)}")
