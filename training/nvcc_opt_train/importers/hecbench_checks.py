"""Static checks of a HeCBench benchmark's sources: which files it uses, and the reasons to
leave it out that can be read without building it (data files, MPI and other libraries,
includes outside its folder, no PASS/FAIL).

The files a benchmark uses are its build's sources and every `#include` they reach inside its
folder; only those are checked and searched for kernels, so an unused alternative file in the
folder neither tags a dead kernel nor skips the benchmark.
"""

from __future__ import annotations

import re
from pathlib import Path

from nvcc_opt_train.importers.hecbench_build import BuildSkip
from nvcc_opt_train.importers.tagging import code_only, unconditional

_DVC_PATH = re.compile(r"^\s*(?:-\s+)?path:\s*(\S+)\s*$")
_INCLUDE = re.compile(rb'^[ \t]*#[ \t]*include[ \t]*([<"])([^>"\n]+)[>"]', re.MULTILINE)
# Headers of libraries outside the CUDA toolkit and the C/C++ standard library.
_THIRD_PARTY = {
    "mpi": "MPI",
    "nccl": "NCCL",
    "boost/": "Boost",
    "gsl/": "GSL",
    "zlib": "zlib",
    "bzlib": "bzip2",
    "gdal": "GDAL",
    "opencv": "OpenCV",
    "eigen": "Eigen",
    "cudnn": "cuDNN",
    "cutensor": "cuTENSOR",
    "cutlass/": "CUTLASS",
    "tbb/": "TBB",
    "torch/": "PyTorch",
    "aten/": "PyTorch",
    "metis": "METIS",
    "parmetis": "ParMETIS",
    "fftw": "FFTW",
    "hdf5": "HDF5",
    "sycl": "SYCL",
    "cl/": "OpenCL",
    "hip/": "HIP",
    "dpct/": "SYCLomatic",
    "fmt/": "fmt",
    "asio": "asio",
    "gmp": "GMP",
}
# Reading a file: fopen in a read mode, an input stream, an image loader.
_READS_FILE = re.compile(
    rb'\bfopen\s*\(([^;]*?),\s*"r|\b(?:std::)?ifstream\s+\w+\s*\(([^;)]*)|\bfreopen\s*\(|\bstbi_load|\bimread\s*\('
)
# A literal that is a relative path to a file: a folder and an extension (input/graph.txt).
_DATA_PATH = re.compile(rb'"(?:\.\.?/)*[\w.+-]+(?:/[\w.+-]+)+\.[A-Za-z]\w*"')
_LITERAL = re.compile(rb'^\s*("[^"]*")\s*$')
# Files the program writes itself: reading one back needs no data.
_WRITES = re.compile(
    rb'\bfopen\s*\(\s*("[^"]*")\s*,\s*"[wa]|\b(?:std::)?ofstream\s+\w+\s*\(\s*("[^"]*")'
)
_SYSTEM_FILE = (b'"/proc/', b'"/sys/', b'"/dev/')
_INCLUDE_LINE = re.compile(rb"^[ \t]*#[ \t]*include\b.*$", re.MULTILINE)
_PASS = re.compile(rb'"[^"\n]*(?:\b|\\n)PASS(ED)?\b[^"\n]*"')
_MPI_CALL = re.compile(rb"\bMPI_Init\b|\bncclCommInit")


def used_files(folder: Path, sources: list[str], include_dirs: list[str]) -> list[str]:
    """The sources and every file they `#include` from inside `folder` (relative paths), in the
    order first reached; BuildSkip for a missing source or an include that leaves the folder."""
    root = folder.resolve()
    search = [root, *((root / d).resolve() for d in include_dirs)]
    order: list[str] = []
    todo = list(sources)
    while todo:
        name = todo.pop(0)
        if name in order:
            continue
        path = root / name
        if not path.is_file():
            raise BuildSkip(f"its build names {name}, which is not in its folder")
        order.append(name)
        for quote, header in _INCLUDE.findall(path.read_bytes()):
            found = _resolve(root, path.parent, search, header.decode(errors="replace"), quote)
            if found is not None and found not in order:
                todo.append(found)
    return order


def _resolve(root: Path, here: Path, search: list[Path], header: str, quote: bytes) -> str | None:
    """The folder-relative path an include names, None for a system header; BuildSkip when it
    names a file outside the folder."""
    places = ([here] if quote == b'"' else []) + search
    for place in places:
        candidate = (place / header).resolve()
        if candidate.is_file():
            try:
                return candidate.relative_to(root).as_posix()
            except ValueError:
                raise BuildSkip(f"includes outside its folder ({header})") from None
    if header.startswith("../"):
        raise BuildSkip(f"includes outside its folder ({header})")
    return None


def third_party(folder: Path, files: list[str]) -> str | None:
    """A reason when the used files need a library outside the CUDA toolkit, else None.

    Code inside `#if`/`#ifdef` branches does not count (`#ifdef USE_MPI`, `#ifdef USE_ROCM`
    are optional paths); `#ifndef` does, since include guards are written with it."""
    for name in files:
        src = unconditional((folder / name).read_bytes())
        for quote, raw in _INCLUDE.findall(src):
            header = raw.decode(errors="replace")
            if (folder / name).parent.joinpath(header).is_file():
                continue
            for prefix, library in _THIRD_PARTY.items():
                if header.lower().startswith(prefix):
                    shown = f"<{header}>" if quote == b"<" else f'"{header}"'
                    return f"needs {library} (#include {shown} in {name})"
        if _MPI_CALL.search(code_only(src)):
            return f"needs MPI or NCCL (calls it in {name})"
    return None


def data_files(folder: Path, files: list[str]) -> str | None:
    """A reason when the used files read input files the default run needs, else None.

    A file read counts when its name is a literal, or when a literal elsewhere names a file
    path (a default like "input/graph.txt"), unless the program writes that file itself or it
    is a system file (/proc/cpuinfo). A read of a name only the command line gives
    (`fopen(argv[2], "r")`) is optional: the default arguments are checked apart."""
    codes = {}
    for name in files:
        code = code_only((folder / name).read_bytes(), strings=True)
        codes[name] = _INCLUDE_LINE.sub(b"", code)
    written = {m.group(1) or m.group(2) for c in codes.values() for m in _WRITES.finditer(c)}
    for name, code in codes.items():
        for path in _DATA_PATH.findall(code):
            if path not in written:
                return f"needs data files (names {path.decode(errors='replace')} in {name})"
        for match in _READS_FILE.finditer(code):
            what = match.group().decode(errors="replace").split("(")[0].split()[0]
            argument = match.group(1) or match.group(2)
            literal = _LITERAL.match(argument or b"")
            if argument is None or (
                literal
                and literal.group(1) not in written
                and not literal.group(1).startswith(_SYSTEM_FILE)
            ):
                return f"needs data files ({what} of a fixed name in {name})"
    return None


def dvc_data(folder: Path) -> str | None:
    """A reason when the folder keeps data in DVC that this checkout lacks, else None.

    HeCBench keeps a benchmark's inputs out of git: a `NAME.dvc` pointer beside the sources
    names them (`outs: - path: data.tar.gz`), and `dvc pull` fetches them. A pointer whose path
    is absent means inputs the run may need are not there, whatever reads them (a name passed
    through variables and helpers is beyond what `data_files` reads), so the benchmark is left
    out rather than found failing at its first run."""
    for pointer in sorted(folder.glob("*.dvc")):
        try:
            text = pointer.read_text("utf-8", errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            match = _DVC_PATH.match(line)
            if match and not (folder / match.group(1).strip("'\"")).exists():
                return (
                    f"needs data files ({match.group(1)} is kept in DVC ({pointer.name}) "
                    "and is not in this checkout: dvc pull fetches it)"
                )
    return None


def prints_pass(folder: Path, files: list[str]) -> bool:
    """Whether a string literal in the used files prints PASS (HeCBench's result check)."""
    return any(
        _PASS.search(code_only((folder / name).read_bytes(), strings=True)) for name in files
    )
