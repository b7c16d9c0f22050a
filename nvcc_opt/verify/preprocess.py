"""The region's code after preprocessing, as the build's own compile sees it (host and device).

A rewrite is judged on what the compiler reads, not on what the model typed: token pasting,
macros and `#ifdef __CUDA_ARCH__` are resolved first. The region's file is copied into a scratch
folder beside the build's own copy (verify/check_copy.py: quoted lookups, `__has_include`
included, resolve as in the build) with the code in place of the region, preceded by
`#line <start> "<marker>"` (`__LINE__` as in the build's copy, regions/splice.py) and followed by
`#line <end+1> "<source>"`, so every preprocessed line of the region is attributed to the marker
(lines of headers it includes to those headers). nvcc -E then runs with the compile's own flags,
once for the host side and once per distinct device architecture.

`nvcc -E` preprocesses for the device, for the first target architecture only. The macros that
make a side (`__CUDA_ARCH__`, `__CUDA_ARCH_FEAT_SM90_ALL`, `CUDA_DOUBLE_MATH_FUNCTIONS`, ...) are
read from `nvcc --dryrun` of the real compile: one host-compiler `-E` line per side. Each side's
run then undefines them all with `-Xcompiler -U...` (nvcc places those after its own `-D`s,
measured with nvcc 13.0) and defines that side's own again.

Unguessable names and instants told the compiler show what of them the code reads: `reads`.
"""

from __future__ import annotations

import bisect
import os
import secrets
import shlex
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from nvcc_opt.launcher import argv, chain
from nvcc_opt.launcher.main import quote_include
from nvcc_opt.launcher.option_table import Role
from nvcc_opt.regions.lexer import DIRECTIVE, bom_length, tokenize
from nvcc_opt.values import RegionSpan
from nvcc_opt.verify.check_copy import beside_build, renumbered
from nvcc_opt.verify.compile_reads import Told, compile_reads
from nvcc_opt.workspace.runner import Runner
from nvcc_opt.workspace.unit import without_options

DEFAULT_TIMEOUT_S = 60.0
REGION_FILE = "<@optimize region>"  # what `__FILE__` reads inside the region, on every run
_DROPPED = frozenset(
    (Role.OUTPUT, Role.DEPFILE, Role.DEP_MODE, Role.DEP_TARGET)
    + (Role.DEP_FLAG, Role.COMPILE, Role.DEVICE_COMPILE, Role.NO_KEY)
)


class PreprocessError(Exception):
    """The code could not be preprocessed: its message says why (compiler errors included)."""


@dataclass(frozen=True)
class Segment:
    """Rows of a preprocessed unit from one file, from `row` (0-based) to the next segment."""

    row: int
    file: str
    system: bool  # gcc's flag 3: a system header


@dataclass(frozen=True)
class Side:
    """One preprocessing of the translation unit: the host side or one device architecture."""

    name: str  # "host" or "device __CUDA_ARCH__=900"
    unit: str  # the whole preprocessed translation unit, linemarkers included
    segments: tuple[Segment, ...]  # which file each row of `unit` comes from, in row order
    region: str  # the region's own preprocessed lines (not its headers'), joined by newlines
    region_lines: tuple[int, ...]  # region_lines[i]: the code's line that region line i+1 is
    includes: tuple[tuple[str, int], ...]  # (header, code line) entered from inside the region
    chunk: tuple[int, int]  # rows of `unit` from the region's entry marker to its exit marker

    @cached_property
    def _rows(self) -> list[int]:
        return [segment.row for segment in self.segments]

    def file_at(self, row: int) -> Segment:
        """The segment holding `row` of `unit`."""
        return self.segments[max(bisect.bisect_right(self._rows, row) - 1, 0)]


@dataclass(frozen=True)
class Preprocessed:
    """A code text for one region, preprocessed for every side its compile builds."""

    code: str
    source: str  # the region's source file as the compile spells it
    marker: str  # the file name the region's lines carry in `Side.unit`
    rdc: bool  # the compile makes relocatable device code (-rdc=true, -dc)
    toolkit: tuple[str, ...]  # nvcc's own include folders (real paths)
    sides: tuple[Side, ...]  # the host side first
    seconds: float  # wall time of the compiler runs
    reads: tuple[tuple[str, int], ...] = ()  # what of its compile it shows: compile_reads.py


def preprocess(
    words: Sequence[str],
    directory: Path,
    file_text: str,
    span: RegionSpan,
    code: str,
    *,
    runner: Runner,
    timeout_s: float = DEFAULT_TIMEOUT_S,
) -> Preprocessed:
    """`code` in place of the region `span` of the file that `words` compiles, preprocessed.

    `words` and `directory` are a compile_commands.json entry's arguments and directory
    (`nvcc_opt.workspace.unit.compile_command`); `file_text` is the region's source file. Raises
    PreprocessError when the command is not an nvcc compile of one source or nvcc -E fails.
    """
    compiler, job = _compile_job(words, directory)
    marker = f"nvcc-opt-region-{secrets.token_hex(8)}"
    started = time.perf_counter()
    spliced = _spliced(file_text, span, code, job.source, marker)
    told = Told.draw()
    with (
        tempfile.TemporaryDirectory(prefix="nvcc-opt-preprocess-") as scratch,
        beside_build(job.source, job.output, directory, spliced) as copy,
    ):
        os.utime(copy, (told.written, told.written))  # what __TIMESTAMP__ reads
        args = _preprocess_args(job, str(copy))
        try:
            include = quote_include(job.source)
        except ValueError as exc:
            raise PreprocessError(str(exc)) from None
        shown = {str(copy): job.source, marker: REGION_FILE}  # errors name what the user knows
        lines = {marker: span.start_line - 1}  # the region's lines are numbered as the build's
        dryrun = [compiler, *args, "-c", "--dryrun"]
        probe = _run(runner, dryrun, directory, timeout_s, shown, lines)
        toolkit, sides = _sides(probe)
        done: list[Side] = []
        env = {**os.environ, "SOURCE_DATE_EPOCH": str(told.epoch)}  # what __DATE__ reads
        for name, flags in sides:
            out = Path(scratch) / f"side{len(done)}.ii"
            command = [compiler, *args, "-E", "-o", str(out), include, *flags]
            _run(runner, command, directory, timeout_s, shown, lines, env)
            unit = out.read_text(encoding="utf-8", errors="replace")
            done.append(_side(name, unit, marker, job.source, span, toolkit))
    return Preprocessed(
        code=code,
        source=job.source,
        marker=marker,
        rdc=job.rdc,
        toolkit=toolkit,
        sides=tuple(done),
        seconds=time.perf_counter() - started,
        reads=compile_reads(done, told.canaries(copy.name, (told.started, time.time()))),
    )


def _compile_job(words: Sequence[str], directory: Path) -> tuple[str, argv.CompileJob]:
    rest = list(words)
    while rest and chain.is_self(rest[0]):  # compile_commands.json may list the launcher too
        rest = rest[1:]
    found = chain.split_chain(rest)
    if found is None or not chain.is_nvcc(found.compiler):
        raise PreprocessError(f"not an nvcc compile: {shlex.join(rest[:3])} ...")
    job = argv.parse(found.args, _read_text, str(directory))
    if isinstance(job, argv.PassThrough):
        raise PreprocessError(f"cannot preprocess this compile ({job.reason})")
    return found.compiler, job


def _read_text(path: str) -> str:
    return Path(path).read_text(encoding="utf-8")


def _preprocess_args(job: argv.CompileJob, copy: str) -> list[str]:
    """The compile's arguments without its mode, output and depfile options, on `copy`."""
    kept = without_options(argv.with_source(job, copy), _DROPPED)
    # -dc is -c with relocatable device code, which defines __CUDACC_RDC__
    return [*kept, "-rdc=true"] if job.rdc else kept


def _spliced(file_text: str, span: RegionSpan, code: str, source: str, marker: str) -> bytes:
    data = file_text.encode("utf-8", "surrogateescape")
    if not 0 <= span.start_offset <= span.end_offset <= len(data):
        raise PreprocessError(f"region {span.name!r} does not fit {source}")
    body = code.encode("utf-8", "surrogateescape")
    if not body.endswith(b"\n"):
        body += b"\n"
    path = source.replace("\\", "\\\\").replace('"', '\\"')
    if "\n" in path:
        raise PreprocessError(f"cannot name {source!r} in a #line directive")
    bom = bom_length(data)  # a byte order mark stays first, where nvcc accepts it
    return b"".join(
        (
            data[:bom],
            f'#line 1 "{path}"\n'.encode("utf-8", "surrogateescape"),
            data[bom : span.start_offset],
            f'#line {span.start_line} "{marker}"\n'.encode(),  # the build's __LINE__
            body,
            f'#line {span.end_line + 1} "{path}"\n'.encode("utf-8", "surrogateescape"),
            data[span.end_offset :],
        )
    )


def _run(
    runner: Runner,
    command: list[str],
    cwd: Path,
    timeout_s: float,
    shown: dict[str, str],
    offsets: dict[str, int],
    env: dict[str, str] | None = None,
) -> str:
    done = runner.run(command, cwd=cwd, env=env, timeout_s=timeout_s, sandbox=False)
    if done.timed_out:
        raise PreprocessError(f"{Path(command[0]).name} timed out after {timeout_s:.0f} s")
    if not done.ok:
        errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
        text = "\n".join((errors or done.stderr.splitlines())[:8])
        for name, label in shown.items():  # a region line: the code's own number
            text = renumbered(text, name, offsets.get(name, 0)).replace(name, label)
        raise PreprocessError(f"the code does not preprocess:\n{text}")
    return done.stderr


def _sides(dryrun: str) -> tuple[tuple[str, ...], list[tuple[str, list[str]]]]:
    """nvcc's include folders, and (name, extra flags) of each side, from `nvcc --dryrun`."""
    toolkit: list[str] = []
    host: dict[str, str] | None = None
    devices: list[dict[str, str]] = []
    for line in dryrun.splitlines():
        if not line.startswith("#$ "):
            continue
        text = line[3:].strip()
        if text.startswith(("INCLUDES=", "SYSTEM_INCLUDES=")):
            words = shlex.split(text.partition("=")[2])
            toolkit += [os.path.realpath(w[2:] or "/") for w in words if w.startswith("-I")]
            toolkit += [os.path.realpath(w) for w in words if w.startswith("/")]
            continue
        words = shlex.split(text)
        if "-E" not in words or not words or words[0].endswith(("cudafe++", "cicc")):
            continue
        defines = _defines(words)
        if "__CUDA_ARCH__" in defines:
            if defines not in devices:
                devices.append(defines)
        elif host is None:
            host = defines
    if host is None:
        raise PreprocessError("nvcc --dryrun shows no host preprocessing step")
    varying = {n for d in devices for n in d if n not in host or d[n] != host[n]}
    sides = [("host", _side_flags(varying, host))]
    for device in devices:
        sides.append(
            (f"device __CUDA_ARCH__={device['__CUDA_ARCH__']}", _side_flags(varying, device))
        )
    return tuple(dict.fromkeys(toolkit)), sides


def _defines(words: list[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for word in words:
        if word.startswith("-D") and len(word) > 2:
            name, _, value = word[2:].partition("=")
            found[name] = value
    return found


def _side_flags(varying: set[str], defines: dict[str, str]) -> list[str]:
    flags = [f"-U{name}" for name in sorted(varying)]
    for name in sorted(varying & defines.keys()):
        flags.append(f"-D{name}={defines[name]}" if defines[name] else f"-D{name}")
    if any("," in flag for flag in flags):
        raise PreprocessError(f"cannot pass {flags} through -Xcompiler (a comma in a value)")
    return [word for flag in flags for word in ("-Xcompiler", flag)]


def _side(
    name: str, unit: str, marker: str, source: str, span: RegionSpan, toolkit: tuple[str, ...]
) -> Side:
    """Split one preprocessed unit into its segments and the region's own lines."""
    lines = unit.split("\n")
    entry = f'# {span.start_line} "{marker}"'
    try:
        first = lines.index(entry)
    except ValueError:
        raise PreprocessError("the region's marker is missing from the preprocessed code") from None
    region, numbers, includes, last = _region(lines, first, marker, source, span, toolkit)
    found = segments(lines)  # the region's own markers are checked by now
    literal = f'"{marker}"'
    text = "\n".join(region).replace(literal, f'"{REGION_FILE}"')
    return Side(
        name, unit, tuple(found), text, tuple(numbers), tuple(includes),
        (first, last),
    )  # fmt: skip


def segments(lines: list[str]) -> list[Segment]:
    """The file of each stretch of rows, from the linemarkers."""
    found: list[Segment] = []
    for row, line in enumerate(lines):
        marker = linemarker(line) if line.startswith("# ") else None
        if marker is not None:
            found.append(Segment(row, marker[1], "3" in marker[2]))
    return found


def linemarker(line: str) -> tuple[int, str, tuple[str, ...]] | None:
    """(line, file, flags) of a gcc linemarker `# N "file" flags`, else None."""
    number, _, rest = line[2:].partition(" ")
    if not number.isdigit() or not rest.startswith('"'):
        return None
    end = rest.rfind('"')
    if end <= 0:
        return None
    name = rest[1:end].replace('\\"', '"').replace("\\\\", "\\")
    return int(number), name, tuple(rest[end + 1 :].split())


def _region(
    lines: list[str],
    first: int,
    marker: str,
    source: str,
    span: RegionSpan,
    toolkit: tuple[str, ...],
) -> tuple[list[str], list[int], list[tuple[str, int]], int]:
    """The region's lines from row `first` (its entry marker) to the marker that leaves it.

    What project headers included from the region expand to counts as the region's, at the
    line of their `#include` (a macro the region defines could make an X-macro file declare
    anything); toolkit and system headers do not. Header markers are trusted; the region's
    own lines are not: a raw string that spans lines and holds `# 1 "file" 1` would read as a
    linemarker. So those lines are lexed again with the markers read among them, and a marker
    inside a literal is an error.
    """
    end = _region_end(lines, first, span, source)
    text: list[str] = []
    numbers: list[int] = []
    includes: list[tuple[str, int]] = []
    own: list[str] = []  # the region's own lines and the markers read among them
    markers: list[int] = []  # indexes into `own`
    headers: list[tuple[bool, int]] = []  # per header entered: the region's, its #include line
    number = 0
    for row in range(first, end):
        line = lines[row]
        marked = linemarker(line) if line.startswith("# ") else None
        if not headers:
            markers += [len(own)] if marked is not None else []
            own.append(line)
        if marked is not None:
            line_no, name, flags = marked
            if "1" in flags:
                includes += [] if headers else [(name, number)]
                project = "3" not in flags and not _under(name, toolkit)
                mine = project and all(m for m, _ in headers)
                headers.append((mine, headers[0][1] if headers else number))
            elif "2" in flags and headers:
                headers.pop()
            if not headers and name == marker:
                number = line_no - span.start_line + 1  # the code's own line
        elif not headers:
            text.append(line)
            numbers.append(number)
            number += 1
        elif all(mine for mine, _ in headers):
            text.append(line)
            numbers.append(headers[0][1])
    _check_markers(own, markers)
    return text, numbers, includes, end


def _under(file: str, folders: tuple[str, ...]) -> bool:
    real = os.path.realpath(file)
    return any(real.startswith(folder + os.sep) for folder in folders)


def _check_markers(own: list[str], markers: list[int]) -> None:
    """Every marker read among the region's own lines is a directive, not text in a literal."""
    data = "\n".join(own).encode("utf-8", "surrogateescape")
    starts = [0] + [i + 1 for i, c in enumerate(data) if c == 10]
    directives = {
        bisect.bisect_right(starts, start) - 1
        for kind, start, _ in tokenize(data)
        if kind == DIRECTIVE
    }
    if any(index not in directives for index in markers):
        raise PreprocessError('a literal in the code holds a linemarker (`# N "file"`)')


def _region_end(lines: list[str], first: int, span: RegionSpan, source: str) -> int:
    """The row of the linemarker that returns to the source after the region (the last one:
    any earlier is the region's own text)."""
    exit_marker = (span.end_line + 1, source)
    for row in range(len(lines) - 1, first, -1):
        line = lines[row]
        marked = linemarker(line) if line.startswith("# ") else None
        if marked is not None and not marked[2] and marked[:2] == exit_marker:
            return row
    raise PreprocessError("the end of the region is missing from the preprocessed code")
