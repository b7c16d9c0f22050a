"""`--from hecbench PATH`: problems from a HeCBench checkout, decided statically.

Every `src/<name>-cuda` folder is a candidate. A benchmark that can be made standalone (its
build read by hecbench_build, its run by hecbench_run, the static checks of hecbench_checks
passed, CUDA 13 fixes by cuda13 only where mechanical) gives one problem per kernel and, as in
the paper, per pair of kernels of one file (A, B and A+B): each a copy of the files it uses with
one tagged region, a generated CMakeLists.txt building `main`, and an nvcc-opt.toml. Nothing is
built or run here; `appcheck` builds and runs each problem afterwards and drops the failures.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from nvcc_opt_train.importers import Skip, cuda13
from nvcc_opt_train.importers.hecbench_build import (
    BuildSkip,
    BuildSpec,
    add_language_flags,
    from_cmake,
    from_makefile,
    render_cmake,
)
from nvcc_opt_train.importers.hecbench_checks import (
    data_files,
    dvc_data,
    prints_pass,
    third_party,
    used_files,
)
from nvcc_opt_train.importers.hecbench_run import RunSpec, render_toml, run_spec, yaml_tests
from nvcc_opt_train.importers.inline_header import inline_header, is_translation_unit
from nvcc_opt_train.importers.makefile import Makefile, read_makefile
from nvcc_opt_train.importers.tagging import (
    Kernel,
    Tagged,
    base_name,
    find_kernels,
    tag_pair,
    tag_single,
    word_counts,
)
from nvcc_opt_train.problemset import Problem

SOURCE = "hecbench"
SUFFIX = "-cuda"


class HecbenchError(ValueError):
    """The checkout cannot be imported at all (no src/ folder, an unknown --only name)."""


@dataclass(frozen=True)
class HecbenchOptions:
    only: tuple[str, ...] = ()  # benchmark names (with or without -cuda); () for all
    max_pairs: int = 3  # pairs (A+B) per benchmark, adjacent kernels first
    max_kernels: int = 8  # single-kernel problems per benchmark, in file order
    max_bytes: int = 2_000_000  # a benchmark whose used files are larger is skipped


@dataclass
class _Bench:
    """What is known of one benchmark once it passed every check."""

    name: str
    folder: Path
    dest: Path  # where the problems' apps go
    files: dict[str, bytes]  # used files, CUDA 13 fixes applied
    cmake: str
    toml: str
    notes: list[str]
    extra: dict[str, Any]


def candidates(root: Path, only: tuple[str, ...]) -> list[Path]:
    """The `src/*-cuda` folders of a checkout (those named by `only`, in its order)."""
    src = root / "src"
    if not src.is_dir():
        raise HecbenchError(f"{root}: not a HeCBench checkout (no src/ folder)")
    found = sorted(p for p in src.iterdir() if p.is_dir() and p.name.endswith(SUFFIX))
    if not only:
        return found
    by_name = {p.name.removesuffix(SUFFIX): p for p in found}
    wanted = [n.removesuffix(SUFFIX) for n in only]
    unknown = [n for n in wanted if n not in by_name]
    if unknown:
        raise HecbenchError(f"--only: no benchmark {', '.join(unknown)} in {src} (*-cuda)")
    return [by_name[n] for n in dict.fromkeys(wanted)]


def import_hecbench(
    root: Path, dest: Path, options: HecbenchOptions, say: Callable[[str], None]
) -> Iterator[Problem | Skip]:
    """Problems (and Skips) from the HeCBench checkout at `root`, apps written under `dest`."""
    folders = candidates(root, options.only)
    try:
        tests = yaml_tests(root)
    except ValueError as exc:
        raise HecbenchError(str(exc)) from exc
    say(f"hecbench: {len(folders)} candidate benchmarks in {root / 'src'}")
    dest.mkdir(parents=True, exist_ok=True)
    ids: set[str] = set()
    made = Counter[str]()
    for folder in folders:
        name = folder.name.removesuffix(SUFFIX)
        try:
            bench = _read(folder, dest, tests.get(name), options)
        except BuildSkip as skip:
            yield Skip(SOURCE, name, str(skip))
            continue
        except OSError as exc:
            yield Skip(SOURCE, name, f"cannot read its files: {exc}")
            continue
        for item in _problems(bench, options, ids):
            if isinstance(item, Problem):
                made[item.kind] += 1
            yield item
    say(f"hecbench: {made['single']} single-kernel and {made['pair']} pair problems")


def _read(
    folder: Path, dest: Path, test: dict[str, Any] | None, options: HecbenchOptions
) -> _Bench:
    """Every static check of one benchmark; BuildSkip with the first reason to leave it out."""
    mk: Makefile | None = None
    if (folder / "Makefile").is_file():
        mk = read_makefile(folder / "Makefile")
    spec: BuildSpec | None = from_cmake(folder)
    if spec is None:
        if mk is None:
            raise BuildSkip("no build description (neither add_hecbench_benchmark nor Makefile)")
        spec = from_makefile(folder, mk)
    elif mk is not None:
        add_language_flags(spec, mk, (folder / "Makefile").read_text("utf-8", errors="replace"))
    used = used_files(folder, spec.sources, spec.include_dirs)
    size = sum((folder / f).stat().st_size for f in used)
    if size > options.max_bytes:
        raise BuildSkip(f"its sources are {size} bytes (max_bytes {options.max_bytes})")
    run = run_spec(test, mk, [(folder / f).read_bytes() for f in used])
    reason = third_party(folder, used) or dvc_data(folder) or data_files(folder, used)
    if reason:
        raise BuildSkip(reason)
    if not prints_pass(folder, used):
        raise BuildSkip("nothing checks its results (its sources print no PASS/FAIL)")
    files, notes = _cuda13(folder, used)
    notes = [
        f"copied from HeCBench src/{folder.name}: the files its build uses ({len(used)})",
        f"build: CMakeLists.txt generated from its {spec.origin}, program main, C++17",
        *_dropped(spec),
        *run.notes,
        "check: PASS required, FAIL forbidden; no numbers compared",
        *notes,
    ]
    for license_file in sorted(folder.glob("LICENSE*")):
        files.setdefault(license_file.name, license_file.read_bytes())
        notes[0] += f" and its {license_file.name}"
    extra = {"hecbench_folder": f"src/{folder.name}", "args": run.args, "time": _time(run)}
    name = folder.name.removesuffix(SUFFIX)
    cmake = render_cmake(spec, _cmake_name(name))
    return _Bench(name, folder, dest, files, cmake, render_toml(run, ["FAIL"]), notes, extra)


def _cuda13(folder: Path, used: list[str]) -> tuple[dict[str, bytes], list[str]]:
    files: dict[str, bytes] = {}
    notes: list[str] = []
    for name in used:
        src = (folder / name).read_bytes()
        why = cuda13.blocker(src)
        if why:
            raise BuildSkip(f"CUDA 13: {name} {why}")
        files[name], fixed = cuda13.fix(src)
        notes += [f"CUDA 13: {note} in {name}" for note in fixed]
    return files, notes


def _dropped(spec: BuildSpec) -> list[str]:
    notes = []
    if spec.added:
        notes.append(
            f"build: {', '.join(spec.added)} from its Makefile (its CMake call lacks them)"
        )
    if spec.dropped:
        flags = ", ".join(dict.fromkeys(spec.dropped))
        notes.append(f"build: dropped {flags} (CMAKE_CUDA_ARCHITECTURES and C++17 are set instead)")
    return notes


def _time(run: RunSpec) -> str:
    return "wall" if run.regex is None else f"regex ({run.unit})"


def _cmake_name(name: str) -> str:
    return "hecbench_" + re.sub(r"[^A-Za-z0-9_]", "_", name)


def _problems(bench: _Bench, options: HecbenchOptions, ids: set[str]) -> Iterator[Problem | Skip]:
    kernels: list[Kernel] = []
    counts = Counter[str]()
    for file, src in bench.files.items():
        if not file.startswith("LICENSE"):
            counts.update(word_counts(src))
    for file, src in bench.files.items():
        if file.startswith("LICENSE"):
            continue
        found, problems = find_kernels(file, src)
        yield from (Skip(SOURCE, bench.name, p) for p in problems)
        for kernel in found:
            if counts[base_name(kernel.name)] > kernel.own_uses:
                kernels.append(kernel)
            else:
                yield Skip(SOURCE, bench.name, f"kernel {kernel.name} ({file}) is never launched")
    if not kernels:
        yield Skip(SOURCE, bench.name, "no kernels to tag (no launched __global__ definition)")
        return
    if len(kernels) > options.max_kernels:
        left = ", ".join(k.name for k in kernels[options.max_kernels :])
        yield Skip(SOURCE, bench.name, f"over max_kernels {options.max_kernels}: {left} left out")
        kernels = kernels[: options.max_kernels]
    tagged: list[Kernel] = []
    for kernel in kernels:
        result = tag_single(bench.files[kernel.file], kernel)
        if isinstance(result, str):
            yield Skip(SOURCE, bench.name, f"kernel {kernel.name} ({kernel.file}): {result}")
            continue
        tagged.append(kernel)
        yield _make(bench, [kernel], kernel.file, result, "single", ids, [])
    for a, b in _pairs(tagged, options.max_pairs):
        result = tag_pair(bench.files[a.file], a, b)
        if isinstance(result, str):
            yield Skip(SOURCE, bench.name, f"pair {a.name}+{b.name} ({a.file}): {result}")
            continue
        between = [
            k for k in tagged if k.file == a.file and a.end_line < k.start_line < b.start_line
        ]
        inside = [a, *between, b]
        notes = [f"the region also holds kernel {k.name} (between the two)" for k in between]
        yield _make(bench, inside, a.file, result, "pair", ids, notes)


def _pairs(kernels: list[Kernel], cap: int) -> list[tuple[Kernel, Kernel]]:
    """Pairs of kernels of one file, adjacent ones first, then in file order; at most `cap`."""
    by_file: dict[str, list[Kernel]] = {}
    for kernel in kernels:
        by_file.setdefault(kernel.file, []).append(kernel)
    ranked = []
    for order, group in enumerate(by_file.values()):
        group.sort(key=lambda k: k.start_line)
        for i, a in enumerate(group):
            for j in range(i + 1, len(group)):
                ranked.append(((j - i, order, i), (a, group[j])))
    return [pair for _, pair in sorted(ranked, key=lambda r: r[0])[:cap]]


def _make(
    bench: _Bench,
    kernels: list[Kernel],
    file: str,
    tagged: Tagged,
    kind: str,
    ids: set[str],
    extra_notes: list[str],
) -> Problem | Skip:
    ends = [kernels[0], kernels[-1]] if kind == "pair" else kernels
    what = "+".join(k.name for k in ends)
    files = {**bench.files, file: tagged.source, "CMakeLists.txt": bench.cmake.encode()}
    notes = [*bench.notes, *extra_notes]
    if not is_translation_unit(file):
        moved = inline_header(bench.files, file, tagged.source)
        if isinstance(moved, str):
            why = f"header not moved: {kind} {what} ({file}): the launcher substitutes regions "
            return Skip(SOURCE, bench.name, why + f"only in the file nvcc compiles, and {moved}")
        unit, text = moved
        files[file] = bench.files[file]  # the header as it was, untagged
        files[unit] = text
        notes.append(f"the tagged kernel's header {file} inlined into {unit}")
        file = unit
    problem_id = _unique_id(f"hecbench-{bench.name}-{what}", ids)
    files["nvcc-opt.toml"] = bench.toml.encode()
    _write_app(bench.dest / problem_id, files)
    return Problem(
        id=problem_id,
        source=SOURCE,
        benchmark=bench.name,
        regions=(f"{file}:{tagged.region}",),
        kernels=tuple(k.name for k in kernels),
        kind=kind,
        region_text=tagged.text,
        notes=tuple(notes),
        extra=dict(bench.extra),
    )


def _unique_id(wanted: str, ids: set[str]) -> str:
    base = re.sub(r"[^A-Za-z0-9._+-]", "_", wanted)[:180]
    candidate, n = base, 1
    while candidate in ids:
        n += 1
        candidate = f"{base}-{n}"
    ids.add(candidate)
    return candidate


def _write_app(final: Path, files: dict[str, bytes]) -> None:
    """Write an app folder in one step (a temporary folder renamed); keep one already there."""
    if final.exists():
        return
    tmp = Path(tempfile.mkdtemp(dir=final.parent, prefix=f".{final.name}."))
    try:
        for name, data in files.items():
            path = tmp / name
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(data)
        os.rename(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
