"""Keeps evaluation kernels out of training: always applied, recorded, and checked by readers.

Two references, both applied by every `nvcc-opt train problems` run:

- the name list shipped in the package (`data/eval_kernels.txt`: RAJAPerf's Apps, Algorithm and
  Polybench kernels and their CUDA functions, LULESH's CUDA kernels), and
- every `--exclude-from DIR`: the `__global__` names of its sources, and the text of each of its
  tagged regions and kernels.

A problem matches when one of its kernels has a listed name (compared after `normalize`), or when
its region text, or one of its kernels' text, is similar to a reference text (`similarity`).
The set's manifest records what was applied (`record`); `require_exclusion` refuses a set without
that record or made with another list, so a trainer cannot forget it.
"""

from __future__ import annotations

import hashlib
import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.tools.ptxas import code_only, kernels
from nvcc_opt_train.problemset import Problem, ProblemSet, ProblemSetError

LIST_NAME = "eval_kernels.txt"
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".cc", ".cxx", ".hpp", ".h", ".hh", ".inl")
SHINGLE = 5  # tokens per shingle: a statement's worth, so a shared `int i = ...` line is 1-3
# Jaccard of the shingle sets at or above which two texts count as the same kernel, on raw tokens
# (catches edited copies) and on tokens with identifiers renamed in order of first use (catches
# copies with every name changed). Measured on benchmarks/suite's 70 region and kernel texts:
# two distinct kernels reach at most 0.55 raw and 0.64 renamed (its nodal/zonal accumulation
# mirror pair); one edited token of a 100-token kernel leaves about 0.9 raw, an added line about
# 0.85, a consistent renaming 1.0 renamed. tests/test_train_exclusion.py keeps these cases.
RAW_THRESHOLD = 0.6
SHAPE_THRESHOLD = 0.8
MIN_SHINGLES = 8  # shorter texts (a one-line kernel) are matched by name only
MAX_FILE_BYTES = 4_000_000

_TOKEN = re.compile(r"[A-Za-z_]\w*|\d[\w.]*|->|<<|>>|[-+*/%&|^!=<>]=|&&|\|\||\+\+|--|\S")
_DIRECTIVE = re.compile(r"^[ \t]*#.*$", re.MULTILINE)
# Words kept when identifiers are renamed: the language and CUDA's built-ins, so the shape of
# the code is what is compared.
_KEPT = frozenset(
    """auto bool break case char const constexpr continue default do double else enum extern float
    for goto if inline int long register restrict return short signed sizeof static struct switch
    template typename unsigned void volatile while size_t __global__ __device__ __host__ __shared__
    __constant__ __restrict__ __syncthreads __syncwarp __launch_bounds__ threadIdx blockIdx
    blockDim gridDim warpSize atomicAdd atomicMax atomicMin atomicCAS atomicExch __shfl_sync
    __shfl_down_sync __shfl_xor_sync __ldg min max fmaxf fminf sqrt sqrtf exp expf fabs fabsf
    x y z""".split()  # noqa: SIM905
)


class ExclusionError(ValueError):
    """An --exclude-from folder or the shipped list cannot be read; one line."""


def normalize(name: str) -> str:
    """A kernel name as matched: lower case, without a `_kernel`/`Kernel` suffix or RAJAPerf's
    `POLYBENCH_` group prefix.

    >>> normalize("CalcVolumeForceForElems_kernel"), normalize("POLYBENCH_ATAX")
    ('calcvolumeforceforelems', 'atax')
    """
    lowered = name.lower()
    for prefix in ("polybench_",):
        if lowered.startswith(prefix) and len(lowered) > len(prefix):
            lowered = lowered[len(prefix) :]
    for suffix in ("_kernel", "kernel"):
        if lowered.endswith(suffix) and len(lowered) > len(suffix):
            return lowered[: -len(suffix)]
    return lowered


def shingles(text: str) -> tuple[frozenset[int], frozenset[int]]:
    """(raw, shape) shingle sets of a code text: SHINGLE consecutive tokens, comments and
    preprocessor lines dropped; in `shape` every identifier not in _KEPT is replaced by its rank
    of first use, so a copy with its names changed consistently has the same shape."""
    code = _DIRECTIVE.sub("", code_only(text))
    raw = _TOKEN.findall(code)
    first: dict[str, str] = {}
    shape = [first.setdefault(t, f"${len(first)}") if _renamed(t) else t for t in raw]
    return _shingled(raw), _shingled(shape)


def _renamed(token: str) -> bool:
    return (token[0].isalpha() or token[0] == "_") and token not in _KEPT


def _shingled(tokens: list[str]) -> frozenset[int]:
    return frozenset(
        hash("\x00".join(tokens[i : i + SHINGLE])) for i in range(len(tokens) - SHINGLE + 1)
    )


def jaccard(a: frozenset[int], b: frozenset[int]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0


def kernel_texts(text: str) -> list[tuple[str, str]]:
    """(name, text from `__global__` to the closing brace) of each `__global__` function defined
    in `text` (comments blanked), every definition of a name (overloads, #if branches)."""
    code = code_only(text)
    found: list[tuple[str, str]] = []
    for name in dict.fromkeys(k.name for k in kernels(_DIRECTIVE.sub("", code))[0]):
        pattern = rf"__global__[^;{{}}]*?\b{re.escape(name)}\s*\((?:[^(){{}};]|\([^()]*\))*\)"
        for match in re.finditer(pattern, code):
            body = code.find("{", match.end())
            gap = code[match.end() : body] if body >= 0 else ";"
            if ";" in gap:  # a declaration
                continue
            end = _closing(code, body)
            if end > 0:
                found.append((name, code[match.start() : end + 1]))
    return found


def _closing(code: str, opening: int) -> int:
    depth = 0
    for i in range(opening, len(code)):
        depth += (code[i] == "{") - (code[i] == "}")
        if depth == 0:
            return i
    return -1


@dataclass(frozen=True)
class Text:
    """One reference text: where it is, and its shingles."""

    label: str
    raw: frozenset[int]
    shape: frozenset[int]


@dataclass
class Exclusion:
    """The names and texts a problem must not match, and what has been matched so far."""

    names: dict[str, str]  # normalized name -> where it is listed
    texts: list[Text]
    list_sha256: str
    folders: tuple[str, ...] = ()
    matched: Counter[str] = field(default_factory=Counter)  # "name" / "similar"

    @classmethod
    def load(cls, exclude_from: Sequence[Path] = ()) -> Exclusion:
        """The shipped list plus each folder of `exclude_from`. ExclusionError naming the file."""
        data = shipped_list()
        names = parse_list(data.decode("utf-8"))
        texts: list[Text] = []
        for folder in exclude_from:
            folder_names, folder_texts = read_folder(folder)
            for name, where in folder_names.items():
                names.setdefault(name, where)
            texts += folder_texts
        folders = tuple(str(Path(f).resolve()) for f in exclude_from)
        return cls(names, texts, hashlib.sha256(data).hexdigest(), folders)

    def match(self, problem: Problem) -> str | None:
        """Why `problem` is an evaluation kernel (one line), or None."""
        for kernel in problem.kernels:
            where = self.names.get(normalize(kernel))
            if where is not None:
                self.matched["name"] += 1
                return f"excluded: kernel {kernel} is an evaluation kernel ({where})"
        units = [("the region", problem.region_text)]
        units += [(f"kernel {name}", body) for name, body in kernel_texts(problem.region_text)]
        for what, text in units:
            found = self.similar(text)
            if found is not None:
                self.matched["similar"] += 1
                label, score = found
                return f"excluded: {what} is like {label} (similarity {score:.2f})"
        return None

    def similar(self, text: str) -> tuple[str, float] | None:
        """The most similar reference text at or above a threshold, and its score."""
        raw, shape = shingles(text)
        if len(shape) < MIN_SHINGLES:
            return None
        best: tuple[str, float] | None = None
        for ref in self.texts:
            score = max(
                _over(jaccard(raw, ref.raw), RAW_THRESHOLD),
                _over(jaccard(shape, ref.shape), SHAPE_THRESHOLD),
            )
            if score > 0 and (best is None or score > best[1]):
                best = (ref.label, score)
        return best

    def record(self, applied_to: int) -> dict[str, Any]:
        """What the manifest keeps under "exclusion"."""
        return {
            "list": LIST_NAME,
            "list_sha256": self.list_sha256,
            "names": len(self.names),
            "texts": len(self.texts),
            "exclude_from": list(self.folders),
            "checked": applied_to,
            "matched": dict(sorted(self.matched.items())),
            "thresholds": {"raw": RAW_THRESHOLD, "shape": SHAPE_THRESHOLD, "shingle": SHINGLE},
        }


def _over(score: float, threshold: float) -> float:
    return score if score >= threshold else 0.0


def shipped_list() -> bytes:
    return resources.files("nvcc_opt_train").joinpath("data", LIST_NAME).read_bytes()


def list_sha256() -> str:
    return hashlib.sha256(shipped_list()).hexdigest()


def parse_list(text: str) -> dict[str, str]:
    """normalized name -> "ORIGIN (NAME)" of the list's `NAME ORIGIN...` lines."""
    names: dict[str, str] = {}
    for line in text.splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            names.setdefault(normalize(words[0]), f"{' '.join(words[1:])}: {words[0]}".strip())
    return names


def read_folder(folder: Path) -> tuple[dict[str, str], list[Text]]:
    """The `__global__` names (normalized -> file) and the region and kernel texts of every
    source file under `folder`. ExclusionError when it is not a folder."""
    if not folder.is_dir():
        raise ExclusionError(f"--exclude-from {folder}: no such folder")
    names: dict[str, str] = {}
    texts: list[Text] = []
    for path in sorted(_sources(folder)):
        rel = path.relative_to(folder).as_posix()
        data = path.read_bytes()
        text = data.decode("utf-8", errors="replace")
        defined = kernel_texts(text)
        for name, _ in defined:
            names.setdefault(normalize(name), f"in {folder.name}/{rel}")
        units = [(f"{folder.name}/{rel}:{name}", body) for name, body in defined]
        for span in scan(data).regions:
            units.append((f"{folder.name}/{rel} region {span.name}", region_text(data, span)))
        for label, body in units:
            raw, shape = shingles(body)
            if len(shape) >= MIN_SHINGLES:
                texts.append(Text(label, raw, shape))
    return names, texts


def _sources(folder: Path) -> Iterable[Path]:
    for path in folder.rglob("*"):
        if path.suffix in SOURCE_SUFFIXES and path.is_file():
            try:
                if path.stat().st_size <= MAX_FILE_BYTES:
                    yield path
            except OSError:
                continue


def require_exclusion(problemset: ProblemSet) -> None:
    """ProblemSetError (one line) unless `problemset` was made with the exclusion, using the
    list this package ships: training on a set without it could train on evaluation kernels."""
    record = problemset.manifest.get("exclusion")
    where = problemset.root
    if not isinstance(record, dict) or "list_sha256" not in record:
        raise ProblemSetError(
            f"{where}: made without the evaluation-kernel exclusion; remake it with this "
            "version's `nvcc-opt train problems`"
        )
    if record["list_sha256"] != list_sha256():
        raise ProblemSetError(
            f"{where}: made with another evaluation-kernel list (sha256 "
            f"{str(record['list_sha256'])[:12]}, this version ships {list_sha256()[:12]}); remake "
            "it with this version's `nvcc-opt train problems`"
        )
