"""The header of a red-team candidate of tests/redteam/classes, shared by its CPU and GPU tests.

// region: smooth_kernel | pair
// expect: PREFIX [PREFIX ...]    any one is an acceptable rejection reason; or `accept`; or
//         `uncredited`: rejected for any reason, or not called faster (no speedup credited)
// what it does, in a sentence (one or more comment lines)
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

REDTEAM = Path(__file__).parent / "redteam"
CLASSES = REDTEAM / "classes"
EXAMPLE = Path(__file__).parents[1] / "examples" / "saxpy-stencil"
REGION_SOURCES = {"smooth_kernel": "stencil.cu", "pair": "update.cu"}
CHEAT_CLASSES = (
    "forged_output",
    "replace_function",
    "state",
    "preprocessor",
    "process",
    "blind_checksum",
)
HONEST = "honest"
# A cheat that need not be rejected, only never credited: its speedup is kept by no verdict (a
# shortcut small enough to pass a rule's noise allowance, whose credit the rule takes away).
UNCREDITED = "uncredited"
GUARDS = (
    "signature",
    "outside",
    "stream",
    "thread",
    "graph",
    "l2",
    "static_buffer",
    "precomputed",
    "library",
    "timer",
)
# The reason prefixes of every line of the verification (tools/bench.py, verify/final.py).
PREFIXES = frozenset(
    (
        *(f"guard_{g}" for g in GUARDS),
        "flags",
        "allowlist",
        "objects",
        "ptx",
        "count",
        "channel",
        "state",
        "missing",
        "numbers_differ",
        "numbers_count",
        "zeros",
        "exit_status",
        "fresh_inputs",
        "sanitizer_memcheck",
        "sanitizer_racecheck",
    )
)


@dataclass(frozen=True)
class Candidate:
    path: Path
    region: str
    expect: tuple[str, ...]  # empty: honest, must not be rejected
    what: str

    @property
    def kind(self) -> str:
        """The class, from the file name `<class>__<what>.cu`."""
        return self.path.stem.split("__")[0]

    @property
    def honest(self) -> bool:
        return not self.expect


def read(path: Path) -> Candidate:
    """The candidate's header; ValueError naming the file and line when it is malformed."""
    lines = path.read_text(encoding="utf-8").splitlines()
    region = _field(path, lines, 1, "region")
    if region not in REGION_SOURCES:
        raise ValueError(f"{path}:1: unknown region {region!r}")
    words = tuple(_field(path, lines, 2, "expect").split())
    unknown = [w for w in words if w not in PREFIXES and words not in (("accept",), (UNCREDITED,))]
    if not words or unknown:
        raise ValueError(f"{path}:2: expect `accept` or known reason prefixes, not {unknown}")
    what = []
    for line in lines[2:]:
        if not line.startswith("// "):
            break
        what.append(line[3:])
    if not what:
        raise ValueError(f"{path}:3: no sentence says what the candidate does")
    expect = () if words == ("accept",) else words
    return Candidate(path, region, expect, " ".join(what))


def _field(path: Path, lines: list[str], number: int, name: str) -> str:
    prefix = f"// {name}:"
    if len(lines) < number or not lines[number - 1].startswith(prefix):
        raise ValueError(f"{path}:{number}: the line must start with {prefix!r}")
    return lines[number - 1][len(prefix) :].strip()


def candidates() -> list[Candidate]:
    return [read(p) for p in sorted(CLASSES.glob("*.cu"))]


FOLDERS = ("classes", "runtime", "allowlist")
# runtime/ files whose name gives one reason where a race or drift shows in several ways
ACCEPTABLE = {
    "race": ("numbers_differ", "sanitizer_racecheck", "missing", "exit_status"),
}
# The lines that judge a candidate without running it (flags, token guards, the allowlist, the
# compiled objects, the build): they run on any machine, so CI checks them.
STATIC = ("guard_", "flags", "allowlist", "objects", "ptx", "build_failed")


def all_candidates() -> list[Path]:
    """Every candidate file of the red-team folders that the full verification judges."""
    return sorted(p for folder in FOLDERS for p in (REDTEAM / folder).glob("*.cu"))


def expectation(path: Path) -> tuple[str, tuple[str, ...]]:
    """(region, acceptable reason prefixes); no prefixes: honest, must not be rejected."""
    folder = path.parent.name
    if folder == "classes":
        candidate = read(path)
        return candidate.region, candidate.expect
    code = path.read_text(encoding="utf-8")
    kind = path.stem.split("__")[0]
    if folder == "allowlist":
        region = code.splitlines()[0].split(":", 1)[1].strip()
        return region, () if kind == "honest" else STATIC
    region = "pair" if "axpy_kernel" in code else "smooth_kernel"
    return region, () if kind == "honest" else ACCEPTABLE.get(kind, (kind,))


def static_only(expected: tuple[str, ...]) -> bool:
    """A cheat that some line refuses before anything runs."""
    return bool(expected) and all(e.startswith(STATIC) for e in expected)
