"""What fires where: every transform of the registry over the suite (`benchmarks/suite/`), the
example (`examples/`), the transform class test kernels and the test fixtures, written to
`benchmarks/search_snapshot.json` (every unit x transform: fires with a digest of the rewrite,
or refused with the reason) and `benchmarks/search_snapshot.md` (per transform, where it fires).

    python -m nvcc_opt.search.snapshot --write   # regenerate both files
    python -m nvcc_opt.search.snapshot           # exit 1 when they differ from the code's result

A unit is one `@optimize` region, or a whole file that tags none. Its facts come from the whole
file and the constants of the headers beside it, as the policy's `search` would find them. A
refusal's reason is measured, not declared: the transform is tried again with the facts the
file lacks (every kernel free of aliasing; every kernel launched with 256 threads); when that
fires, the missing fact is the reason, else the code holds no instance of the pattern.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path

from nvcc_opt.regions.scan import region_text, scan
from nvcc_opt.search.cuda import Source
from nvcc_opt.search.find_facts import with_command_line
from nvcc_opt.search.kernel_facts import Facts
from nvcc_opt.search.launches import (
    Launch,
    definitions,
    facts_from,
    launches,
    macro_types,
    type_aliases,
)
from nvcc_opt.search.pointer_aliases import (
    expand,
    pointer_aliases,
    pointer_holders,
    pointer_names,
    unresolved_pointers,
)
from nvcc_opt.search.transforms import TRANSFORMS, Transform

ROOT = Path(__file__).resolve().parents[2]
JSON = ROOT / "benchmarks" / "search_snapshot.json"
MARKDOWN = ROOT / "benchmarks" / "search_snapshot.md"
# (group, folder): where units come from, in the table's order
SOURCES = (
    ("suite", "benchmarks/suite"),
    ("example", "examples"),
    ("classes", "tests/fixtures/search_classes"),
    ("fixtures", "tests/fixtures"),
)
SUFFIXES = (".cu", ".cuh")
HEADERS = (".h", ".cuh", ".hpp")
NO_KERNEL = "no kernel"
ALIASING = "refused: aliasing unknown"  # no launch shows the kernel's pointers distinct
BLOCK = "refused: block size unknown"  # no launch with a constant block size
PATTERN = "refused: no pattern"  # the code holds no instance of the transform's pattern


@dataclass(frozen=True)
class Unit:
    group: str
    name: str  # path relative to the repository, `:region` for a region
    code: str
    facts: Facts


def units(root: Path = ROOT) -> list[Unit]:
    found: list[Unit] = []
    seen: set[Path] = set()
    for group, folder in SOURCES:
        for path in sorted((root / folder).rglob("*")):
            if path.suffix not in SUFFIXES or path in seen or not path.is_file():
                continue
            seen.add(path)
            found += file_units(group, path, root)
    return found


def file_units(
    group: str,
    path: Path,
    root: Path,
    launchers: tuple[Path, ...] = (),
    given: Mapping[str, str] | None = None,
) -> list[Unit]:
    """The units of `path`; the launches in `launchers` (other files of the program, as the
    policy's `search` finds them) count beside the file's own; `given`: the macros the build's
    command line defines (compiler_analysis names them to the policy), constants and types."""
    data = path.read_bytes()
    text = data.decode("utf-8", "replace")
    # the constants the policy's `search` would find: the file's and its folder's headers'
    headers = [h for h in sorted(path.parent.iterdir()) if h.suffix in HEADERS and h.is_file()]
    names = {k: v for h in headers for k, v in definitions(h.read_text(errors="replace")).items()}
    types: dict[str, str] = {}
    for h in headers:
        types = type_aliases(h.read_text(errors="replace"), types)
    pointers: dict[str, str] = {}
    named = pointer_names(text) | pointer_holders(text)  # pointer types left unresolved, structs
    for h in headers:
        pointers = pointer_aliases(h.read_text(errors="replace"), pointers)
        named |= pointer_names(h.read_text(errors="replace"))
        named |= pointer_holders(h.read_text(errors="replace"))
    pointers = pointer_aliases(text, pointers)
    found = launches(text)
    for other in launchers:
        found += launches(other.read_text(errors="replace")) if other != path else []
    names, _ = with_command_line(text, {**names, **definitions(text)}, given or {})
    facts_of_file = found, names, macro_types(names, type_aliases(text, types))
    name = str(path.relative_to(root))
    regions = scan(data).regions
    pieces = [(f"{name}:{r.name}", region_text(data, r)) for r in regions] or [(name, text)]
    return [
        Unit(group, label, code, _facts(code, pointers, named, *facts_of_file))
        for label, code in pieces
        if Source(code).kernels() or not regions
    ]


def _facts(
    code: str,
    pointers: dict[str, str],
    named: set[str],
    found: list[Launch],
    names: dict[str, str],
    types: dict[str, str],
) -> Facts:
    """As the policy's: read on the code with its pointer type names spelled out; a kernel with
    a parameter of a pointer type name left unresolved, or of a struct that holds a pointer, is
    not taken as free of aliasing."""
    spelled = expand(code, pointers)
    facts = replace(facts_from(spelled, found, names, types), pointer_aliases=pointers)
    unresolved = unresolved_pointers(spelled, named - set(pointers))
    return replace(facts, no_alias=facts.no_alias - unresolved)


def outcome(transform: Transform, unit: Unit) -> str:
    """`fires <digest>` or the reason it does not."""
    kernels = Source(unit.code).kernels()
    if not kernels:
        return NO_KERNEL
    result = _apply(transform, unit.code, unit.facts)
    if result is not None:
        return "fires " + hashlib.sha256(result.encode()).hexdigest()[:10]
    names = frozenset(k.name for k in kernels)
    if _apply(transform, unit.code, replace(unit.facts, no_alias=names)) is not None:
        return ALIASING
    sizes = {**{n: 256 for n in names}, **unit.facts.block_sizes}
    if _apply(transform, unit.code, replace(unit.facts, block_sizes=sizes)) is not None:
        return BLOCK
    return PATTERN


def _apply(transform: Transform, code: str, facts: Facts) -> str | None:
    result = transform.apply(code, facts)
    return None if result is None or result == code else result


def table(found: list[Unit]) -> dict[str, dict[str, str]]:
    return {u.name: {t.name: outcome(t, u) for t in TRANSFORMS} for u in found}


def markdown(found: list[Unit], outcomes: dict[str, dict[str, str]]) -> str:
    groups = [g for g, _ in SOURCES]
    lines = [
        "# What each search transform fires on",
        "",
        "Generated by `python -m nvcc_opt.search.snapshot --write`; "
        "`tests/test_search_snapshot.py` checks it is current. Every unit and reason: "
        "`search_snapshot.json`.",
        "",
        "| transform | " + " | ".join(groups) + " | fires on (example and class kernels) |",
        "|---" * (len(groups) + 2) + "|",
    ]
    for t in TRANSFORMS:
        fired = [u for u in found if outcomes[u.name][t.name].startswith("fires")]
        counts = [str(sum(u.group == g for u in fired)) for g in groups]
        shown = [u.name.split("/")[-1] for u in fired if u.group in ("example", "classes")]
        outside = ", ".join(f"`{name}`" for name in shown) or "none"
        lines.append(f"| {t.name} | " + " | ".join(counts) + f" | {outside} |")
    units_per = ", ".join(f"{g} {sum(u.group == g for u in found)}" for g in groups)
    lines += [
        "",
        f"Units (regions, or whole files that tag none): {units_per}. Reasons in the JSON: "
        f"`{ALIASING}` (it fires once every kernel is taken as free of aliasing: no launch "
        f"shows it), `{BLOCK}` (it fires once every kernel is launched with 256 threads), "
        f"`{PATTERN}`, `{NO_KERNEL}`.",
        "",
    ]
    return "\n".join(lines)


def render(root: Path = ROOT) -> tuple[str, str]:
    found = units(root)
    outcomes = table(found)
    rows = [f"{json.dumps(name)}: {json.dumps(row)}" for name, row in sorted(outcomes.items())]
    return "{\n" + ",\n".join(rows) + "\n}\n", markdown(found, outcomes)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate the snapshot files")
    args = parser.parse_args(argv)
    data, text = render()
    if args.write:
        JSON.write_text(data)
        MARKDOWN.write_text(text)
        return 0
    stale = [p.name for p, new in ((JSON, data), (MARKDOWN, text)) if _read(p) != new]
    for name in stale:
        print(f"benchmarks/{name} is stale: run python -m nvcc_opt.search.snapshot --write")
    return 1 if stale else 0


def _read(path: Path) -> str:
    return path.read_text() if path.exists() else ""


if __name__ == "__main__":
    sys.exit(main())
