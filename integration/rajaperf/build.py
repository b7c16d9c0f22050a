"""Configure and build a prepared checkout: CMake, Ninja, CUDA for sm_90, nvcc-opt as the CUDA
compiler launcher; each tagged kernel's object compiled first, so a kernel whose tagged file does
not compile is reported (and its tag undone) while the others go on.

What the 36 kernels need: RAJAPerf's driver links every group (its kernel table names them all),
so the build cannot leave groups out; it leaves out what it can: OpenMP, Kokkos, tests and RAJA's
examples and exercises, and every GPU block size but the default 256 (the tuning timed), which
cuts the template instantiations of every *-Cuda.cpp.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

from integration.rajaperf.fixes import cub_dir
from integration.rajaperf.kernels import Kernel
from integration.rajaperf.ledger import Ledger
from integration.rajaperf.prepare import cuda_file, record_not_tagged, untag

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
    """The Ninja target of the object the build tree compiles `source` into (compile_commands.json's
    output, or its command's -o), relative to the build tree as build.ninja names it: newer CMake
    writes it absolute, and Ninja knows no absolute target."""
    commands = build / "compile_commands.json"
    if not commands.is_file():
        return None
    for entry in json.loads(commands.read_text(encoding="utf-8")):
        if Path(entry.get("file", "")).resolve() != source.resolve():
            continue
        output = entry.get("output")  # CMake 3.20+ on some generators; else the command's -o
        if not output:
            argv = entry.get("arguments") or shlex.split(entry.get("command", ""))
            output = argv[argv.index("-o") + 1] if "-o" in argv[:-1] else None
        return None if output is None else _target(build, Path(output))
    return None


def _target(build: Path, output: Path) -> str:
    if not output.is_absolute():
        return str(output)
    for top in (build, build.resolve()):
        if output.is_relative_to(top):
            return str(output.relative_to(top))
    resolved = output.resolve()
    return str(
        resolved.relative_to(build.resolve())
        if resolved.is_relative_to(build.resolve())
        else output
    )


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
