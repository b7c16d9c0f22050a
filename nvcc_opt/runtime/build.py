"""Building the channel library (`channel.cpp`) for this machine, once, into the user's cache.

It needs a C++ compiler and CUPTI, which every CUDA toolkit ships: its headers beside `cuda.h`
(or under `extras/CUPTI/include`) and `libcupti.so` beside the runtime libraries (or under
`extras/CUPTI/lib64`). The toolkit is the one of the `nvcc` on PATH. The library is keyed by the
source, the compiler and the CUPTI found, built under a file lock (parallel verifications), and
linked with an rpath to that CUPTI so the application needs nothing more.
"""

from __future__ import annotations

import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock

from nvcc_opt.workspace.runner import Runner

SOURCE = Path(__file__).with_name("channel.cpp")
# included by SOURCE: part of the cache key
HEADERS = tuple(Path(__file__).with_name(h) for h in ("digest.h", "elements.h", "names.h"))
LIBRARY = "libnvcc_opt_channel.so"
BUILD_TIMEOUT_S = 300.0


class ChannelUnavailable(RuntimeError):
    """The channel cannot be built here; the message says why."""


@dataclass(frozen=True)
class Cupti:
    include: Path  # holds cupti.h
    cuda_include: Path  # holds cuda.h
    lib: Path  # holds libcupti.so


def cache_root() -> Path:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(cache) / "nvcc-opt" / "channel"


def toolkit(nvcc: str | None = None) -> Path:
    """The CUDA toolkit folder of `nvcc` (default: the one on PATH); the wrapper scripts some
    machines put in /usr/local/bin are followed to the real compiler."""
    found = nvcc or shutil.which("nvcc")
    if found is None:
        raise ChannelUnavailable("nvcc is not on PATH, so no CUDA toolkit (and no CUPTI) was found")
    real = Path(os.path.realpath(found))
    return (_wrapped_compiler(real) or real).parent.parent


def _wrapped_compiler(script: Path) -> Path | None:
    """The nvcc a small `exec /path/nvcc "$@"` wrapper script runs."""
    try:
        with open(script, "rb") as handle:
            head = handle.read(4096)
    except OSError:
        return None
    if not head.startswith(b"#!"):
        return None
    text = head.decode("utf-8", "replace")
    for word in text.split():
        if word.endswith("/nvcc") and Path(word).is_file():
            return Path(os.path.realpath(word))
    return None


def find_cupti(root: Path) -> Cupti:
    includes = [root / "include", root / "extras" / "CUPTI" / "include"]
    libs = [
        root / "lib64",
        root / "targets" / "x86_64-linux" / "lib",
        root / "targets" / "sbsa-linux" / "lib",
        root / "extras" / "CUPTI" / "lib64",
        root / "lib",
    ]
    include = next((p for p in includes if (p / "cupti.h").is_file()), None)
    lib = next((p for p in libs if (p / "libcupti.so").exists()), None)
    cuda_include = root / "include"
    if include is None or lib is None or not (cuda_include / "cuda.h").is_file():
        missing = "cupti.h" if include is None else "libcupti.so" if lib is None else "cuda.h"
        raise ChannelUnavailable(f"{missing} not found in the CUDA toolkit at {root}")
    return Cupti(include, cuda_include, lib)


def library(runner: Runner, *, nvcc: str | None = None, root: Path | None = None) -> Path:
    """The built channel library, building it first if needed. Raises ChannelUnavailable."""
    cupti = find_cupti(toolkit(nvcc))
    compiler = shutil.which("g++") or shutil.which("c++")
    if compiler is None:
        raise ChannelUnavailable("no C++ compiler (g++ or c++) on PATH to build the channel")
    source = b"\0".join(p.read_bytes() for p in (SOURCE, *HEADERS))
    key = hashlib.sha256(b"\0".join([source, compiler.encode(), str(cupti).encode()])).hexdigest()
    folder = (root or cache_root()) / key[:16]
    built = folder / LIBRARY
    if built.is_file():
        return built
    folder.mkdir(parents=True, exist_ok=True)
    with FileLock(str(folder / "build.lock")):
        if built.is_file():
            return built
        partial = folder / f"{LIBRARY}.{os.getpid()}.tmp"
        command = [
            compiler, "-shared", "-fPIC", "-std=c++17", "-O2",
            f"-I{cupti.cuda_include}", f"-I{cupti.include}", str(SOURCE), "-o", str(partial),
            f"-L{cupti.lib}", "-lcupti", "-ldl", f"-Wl,-rpath,{cupti.lib}",
        ]  # fmt: skip
        done = runner.run(command, cwd=folder, timeout_s=BUILD_TIMEOUT_S, sandbox=False)
        if not done.ok:
            first = next((x for x in done.stderr.splitlines() if "error" in x), done.stderr[-300:])
            raise ChannelUnavailable(f"building the channel failed: {first.strip()[:300]}")
        os.replace(partial, built)
    return built


def environment(library: Path, out: Path, state: Path | None = None) -> dict[str, str]:
    """The variables that put the channel into a run: the driver loads `library` at cuInit in
    every CUDA process the run starts, which writes its report into `out`."""
    env = {"CUDA_INJECTION64_PATH": str(library), "NVCC_OPT_CHANNEL_OUT": str(out)}
    env["NVCC_OPT_CHANNEL_STATE"] = "" if state is None else str(state)
    return env
