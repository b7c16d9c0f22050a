"""Which search transforms fire on the regions of a problem set (`nvcc-opt train problems`, e.g.
HeCBench's kernels imported from a user's checkout): real code from outside this repository, read
as the snapshot reads the suite (nvcc_opt/search/snapshot.py: facts from the region's file and
the headers beside it), with the launches of every source file of the app as the policy's
`search` finds them and the macros its build defines on the command line as compiler_analysis
names them, without a GPU. Pairs are left out (a pair repeats its kernels).

    python benchmarks/problem_fires.py SET [--out FILE.json]

Prints, per transform, on how many regions it fires and why it is refused elsewhere (a missing
fact: aliasing or block size unknown; or no instance of its pattern), then how many regions no
transform changes (only flags could).
"""

from __future__ import annotations

import argparse
import json
import re
import shlex
import sys
from collections import Counter
from pathlib import Path

from nvcc_opt.regions.scan import scan
from nvcc_opt.search.snapshot import NO_KERNEL, file_units, outcome
from nvcc_opt.search.transforms import TRANSFORMS
from nvcc_opt.workspace.defines import defines

SOURCES = (".cu", ".cuh", ".cpp", ".h", ".hpp")
LAUNCHERS = (".cu", ".cuh", ".cpp")  # files whose launches count for every region of the app
# the command-line macros a CMakeLists gives (one target's or every source's)
DEFINITIONS = re.compile(
    r"(target_compile_definitions|add_compile_definitions|add_definitions)\s*\(([^)]*)\)"
)


def compile_definitions(app: Path) -> dict[str, str]:
    """The macros the app's generated CMake build gives every source on the command line
    (`target_compile_definitions(main PRIVATE dfloat=double)`), as compiler_analysis names them
    to the policy."""
    lists = app / "CMakeLists.txt"
    text = lists.read_text(errors="replace") if lists.is_file() else ""
    words = []
    for call, found in DEFINITIONS.findall(text):
        items = shlex.split(found, comments=True)
        for item in items[1:] if call == "target_compile_definitions" else items:  # its target
            if item in ("PRIVATE", "PUBLIC", "INTERFACE"):
                continue
            if call == "add_definitions":  # -DX=Y as written
                words.append(item)
            else:
                words.append(item if item.startswith("-D") else f"-D{item}")
    return defines(words)


def tagged_files(app: Path) -> list[Path]:
    return [
        p
        for p in sorted(app.rglob("*"))
        if p.suffix in SOURCES and p.is_file() and scan(p.read_bytes()).regions
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("set", type=Path)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    problems = [
        json.loads(line)
        for split in ("train.jsonl", "eval.jsonl")
        if (args.set / split).is_file()
        for line in (args.set / split).read_text().splitlines()
        if line.strip()
    ]
    fires: Counter[str] = Counter()
    refused: dict[str, Counter[str]] = {t.name: Counter() for t in TRANSFORMS}
    rows: dict[str, dict[str, str]] = {}
    regions = 0
    for problem in problems:
        if problem.get("kind", "single") == "pair":
            continue
        app = args.set / problem["app"]
        programs = tuple(p for p in sorted(app.rglob("*")) if p.suffix in LAUNCHERS and p.is_file())
        for path in tagged_files(app):
            for unit in file_units(problem["id"], path, app, programs, compile_definitions(app)):
                outcomes = {t.name: outcome(t, unit) for t in TRANSFORMS}
                if all(o == NO_KERNEL for o in outcomes.values()):
                    continue
                regions += 1
                rows[f"{problem['id']}:{unit.name}"] = outcomes
                for name, said in outcomes.items():
                    if said.startswith("fires"):
                        fires[name] += 1
                    else:
                        refused[name][said] += 1
    print(f"{regions} regions of {len(problems)} problems (pairs left out)\n")
    print("| transform | fires | refused: aliasing unknown | block size unknown | no pattern |")
    print("|---|---:|---:|---:|---:|")
    for t in TRANSFORMS:
        r = refused[t.name]
        print(
            f"| {t.name} | {fires[t.name]} | {r['refused: aliasing unknown']} | "
            f"{r['refused: block size unknown']} | {r['refused: no pattern']} |"
        )
    none = [name for name, o in rows.items() if not any(v.startswith("fires") for v in o.values())]
    print(f"\nregions where no transform fires: {len(none)} of {regions}")
    if args.out:
        args.out.write_text(json.dumps(rows, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
