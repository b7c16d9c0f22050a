"""`nvcc-opt import` and `export`: rewrites as JSON, so teams can share them.

An import file is untrusted input: `nvcc_opt.untrusted` reads it (a regular file, size cap,
strict UTF-8 and JSON, no duplicate keys, 64-bit integers, bounded nesting, valid Unicode without
NUL) and the pydantic models below allow only the shape `export` writes. The whole file is
checked before anything is written: every bad entry (compile_args outside nvcc_opt.flags'
allowlist included) is reported with the file and a line, and then nothing is stored. Imported
rewrites always arrive as *proposed*, whatever state they had where they were exported; one
already here as revoked or rejected comes back only when asked (`--reopen`).
"""

from __future__ import annotations

import os
import shlex
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import ErrorDetails

from nvcc_opt import flags, untrusted
from nvcc_opt.records import CompileContext, NewRewrite, RegionSpan, Rewrite, RewriteState
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store
from nvcc_opt.store.reopen import Closed, Outcome, add_or_reopen

FORMAT = "nvcc-opt/rewrites"
VERSION = 1
HEX = frozenset("0123456789abcdef")
MAX_PROBLEMS = 20


def _is_hash(word: str, minimum: int = 8) -> bool:
    return len(word) >= minimum and set(word.lower()) <= HEX


class ContextIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    compiler_version: str = ""
    host_compiler: str = ""
    flags: list[str] = Field(default_factory=list)
    nvcc_env: list[tuple[str, str]] = Field(default_factory=list)
    file_hash: str = ""
    targets: list[str] = Field(default_factory=list)


class RewriteIn(BaseModel):
    """One entry; `file`, `region` and `code` are required, the rest is optional."""

    model_config = ConfigDict(extra="forbid")
    file: str
    region: str = Field(description="the region's name, or its text sha256 (or a prefix)")
    code: str
    explanation: str = ""
    compile_args: list[str] = Field(default_factory=list)
    targets: list[str] | None = None
    context: ContextIn | None = None
    statistics: dict[str, Any] = Field(default_factory=dict)
    model: str = ""
    trace: Any = None
    region_name: str | None = None  # written by export: the name when `region` is not found
    region_hash: str | None = None  # written by export: the text the rewrite was made for
    state: str | None = None  # written by export; ignored (imports are proposed)

    @field_validator("file", "region", "region_name")
    @classmethod
    def _one_printable_line(cls, value: str | None) -> str | None:
        # names and paths end up in messages and commands: one line, nothing hidden
        if value is not None and not (value and value.isprintable()):
            raise ValueError("must be non-empty printable text on one line")
        return value

    @field_validator("region_hash")
    @classmethod
    def _full_hash(cls, value: str | None) -> str | None:
        if value is not None and not _is_hash(value, 64):
            raise ValueError("must be the region text's sha256: 64 hex digits")
        return None if value is None else value.lower()


class Bundle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = FORMAT
    version: int = VERSION
    rewrites: list[Any]  # each a RewriteIn, validated one by one: see `_entries`

    @field_validator("format")
    @classmethod
    def _known_format(cls, value: str) -> str:
        if value != FORMAT:
            raise ValueError(f"not an nvcc-opt rewrites file (format {value!r}, want {FORMAT!r})")
        return value

    @field_validator("version")
    @classmethod
    def _known_version(cls, value: int) -> int:
        if not 1 <= value <= VERSION:
            raise ValueError(f"version {value} is not one this nvcc-opt reads (1 to {VERSION})")
        return value


class ImportFileError(ValueError):
    """A bad import file; each line of the message names the file and a line in it."""


@dataclass(frozen=True)
class Imported:
    rewrite: Rewrite
    outcome: Outcome
    warning: str


@dataclass(frozen=True)
class Parsed:
    """An import file read and validated whole: nothing in it has touched the store yet."""

    path: Path
    text: str
    entries: list[RewriteIn]

    @cached_property
    def lines(self) -> list[int]:
        """The line each entry starts on: a second parse, so only when a message needs one."""
        return untrusted.element_lines(self.text, ("rewrites",))

    def where(self, index: int) -> str:
        line = self.lines[index] if index < len(self.lines) else 1
        return f"{untrusted.shown(self.path)}:{line}: rewrites[{index}]"


def parse_bundle(path: Path) -> Parsed:
    """Read `path` by `untrusted`'s rules and validate its shape; ImportFileError (each line of
    it naming the file and a line in it) for anything wrong."""
    try:
        data, text = untrusted.read_json(path)
    except untrusted.UntrustedError as exc:
        raise ImportFileError(exc.about(path)) from exc
    try:
        bundle = Bundle.model_validate(data)
    except ValidationError as exc:
        raise ImportFileError(_describe(path, text, exc.errors())) from exc
    entries, errors = _entries(bundle.rewrites)
    if errors:
        raise ImportFileError(_describe(path, text, errors))
    return Parsed(path, text, entries)


def _entries(rewrites: list[Any]) -> tuple[list[RewriteIn], list[ErrorDetails]]:
    """Each entry validated; the errors (at `rewrites[i]...`) of the first entries that have
    any, until there are more than MAX_PROBLEMS: a huge file of bad entries costs no more."""
    entries: list[RewriteIn] = []
    errors: list[ErrorDetails] = []
    for index, entry in enumerate(rewrites):
        try:
            entries.append(RewriteIn.model_validate(entry))
        except ValidationError as exc:
            errors += [{**e, "loc": ("rewrites", index, *e["loc"])} for e in exc.errors()]
            if len(errors) > MAX_PROBLEMS:
                break
    return entries, errors


def _describe(path: Path, text: str, errors: list[ErrorDetails]) -> str:
    problems = []
    for error in errors:
        where = tuple(error["loc"])
        message = "expected a JSON object" if error["type"] == "model_type" else error["msg"]
        line = untrusted.line_of(text, where)
        place = untrusted.format_path(where) or "top level"
        problems.append(f"{untrusted.shown(path)}:{line}: {place}: {message}")
    return _lines(problems)


def _lines(problems: list[str]) -> str:
    """The first MAX_PROBLEMS problems, one a line, and a line that says if there are more."""
    more = (
        [f"... and more (the first {MAX_PROBLEMS} shown)"] if len(problems) > MAX_PROBLEMS else []
    )
    return "\n".join(problems[:MAX_PROBLEMS] + more)


def _context(entry: ContextIn | None) -> CompileContext | None:
    if entry is None:
        return None
    return CompileContext(
        compiler_version=entry.compiler_version,
        host_compiler=entry.host_compiler,
        flags=tuple(entry.flags),
        nvcc_env=tuple(entry.nvcc_env),
        file_hash=entry.file_hash,
        targets=tuple(entry.targets),
    )


def _match(entry: RewriteIn, regions: tuple[RegionSpan, ...]) -> list[RegionSpan]:
    word = entry.region
    by_name = [r for r in regions if r.name == word]
    if by_name or not _is_hash(word):
        return by_name
    return [r for r in regions if r.text_hash.startswith(word.lower())]


def _name_seen(store: Store, file: Path, digest: str) -> str | None:
    """The name a build saw the region text `digest` under, if any."""
    return next((r.name for r in store.regions(str(file)) if r.text_hash == digest), None)


def resolve(store: Store, entry: RewriteIn, root: Path) -> tuple[NewRewrite, str]:
    """Bind an entry to a region of its file: (new rewrite, warning or ""), or ImportFileError;
    the caller says which entry.

    An entry names the region by name or text hash; `region_hash`, when given, keeps the text the
    rewrite was made for, so a rewrite for other text is stored for that text (never applied
    to the region as it is now).
    """
    # realpath, not Path.resolve: that raises RuntimeError on a symlink loop (Python 3.11)
    file = Path(os.path.realpath(root / entry.file))
    try:
        source = untrusted.read_regular(file)
    except untrusted.UntrustedError as exc:
        raise ImportFileError(f"{exc.message}: {untrusted.shown(file)}") from exc
    regions = scan(source).regions
    match = _match(entry, regions)
    given = entry.region_hash or ""
    if len(match) > 1:
        raise ImportFileError(f"region {entry.region!r} is ambiguous in {file}")
    if match:
        name, digest = match[0].name, match[0].text_hash
        warning = ""
        if given and given != digest:
            digest = given
            warning = f"made for other text of {name!r}; it applies once they match"
    elif _is_hash(given or entry.region, 64):
        digest = given or entry.region.lower()
        name = entry.region_name or _name_seen(store, file, digest) or entry.region
        warning = f"region text differs from {file} now; it applies once they match"
    else:
        known = ", ".join(r.name for r in regions) or "none"
        raise ImportFileError(f"no region {entry.region!r} in {file} (regions: {known})")
    return _new_rewrite(entry, file, name, digest), warning


def _new_rewrite(entry: RewriteIn, file: Path, name: str, digest: str) -> NewRewrite:
    return NewRewrite(
        file=str(file),
        region_name=name,
        region_hash=digest,
        code=entry.code,
        explanation=entry.explanation,
        compile_args=tuple(entry.compile_args),
        # Sorted and unique as the launcher normalises a compile's targets.
        targets=None if entry.targets is None else tuple(sorted(set(entry.targets))),
        context=_context(entry.context),
        statistics=entry.statistics,
        model=entry.model,
        trace=entry.trace,
        origin="import",
    )


def import_bundle(store: Store, parsed: Parsed, root: Path, *, reopen: bool) -> list[Imported]:
    """Check every entry, then store them all as proposed (or none, on any error).

    An entry already here as revoked or rejected is an error, unless `reopen`: then that
    rewrite is proposed again, with a decision that says it was imported again from this file.
    """
    resolved: list[tuple[NewRewrite, str]] = []
    problems: list[str] = []
    for index, entry in enumerate(parsed.entries):
        # the entry's own targets, when it names them, are the only ones it can ever apply to
        refused = flags.refused(entry.compile_args, entry.targets)
        problems += [f"{parsed.where(index)}: {r}" for r in refused]
        try:
            new, warning = resolve(store, entry, root)
        except ImportFileError as exc:
            problems.append(f"{parsed.where(index)}: {exc}")
            continue
        resolved.append((new, warning and f"{parsed.where(index)}: {warning}"))
    if problems:
        raise ImportFileError(_lines(problems))
    again = f"imported again from {untrusted.shown(os.path.abspath(parsed.path))}"
    try:
        added = add_or_reopen(store, [new for new, _ in resolved], again if reopen else None)
    except Closed as exc:
        raise ImportFileError(_closed(exc, parsed)) from exc
    return [
        Imported(done.rewrite, done.outcome, warning)
        for done, (_, warning) in zip(added, resolved, strict=True)
    ]


def _closed(exc: Closed, parsed: Parsed) -> str:
    lines = []
    for index, rewrite in exc.closed.items():
        last = rewrite.decisions[-1] if rewrite.decisions else None
        when = f" on {last.at[:19].replace('T', ' ')} UTC" if last else ""  # `at`: ISO-8601 UTC
        again = shlex.quote(untrusted.shown(parsed.path))
        lines.append(
            f"{parsed.where(index)}: #{rewrite.id} ({rewrite.region_name}) is here already,"
            f" {rewrite.state.value}{when}; `nvcc-opt import --reopen {again}`"
            " proposes it again, its history kept"
        )
    return _lines(lines)


def _relative(file: str, root: Path) -> str:
    return os.path.relpath(file, root) if Path(file).is_relative_to(root) else file


def export(store: Store, states: list[RewriteState], root: Path) -> dict[str, Any]:
    """Rewrites in `states` as `import` reads them, files relative to `root` where inside it."""
    entries = []
    for rewrite in store.rewrites(states=states):
        context = rewrite.context
        entries.append(
            {
                "file": _relative(rewrite.file, root),
                "region": rewrite.region_name,
                "region_name": rewrite.region_name,
                "region_hash": rewrite.region_hash,
                "code": rewrite.code,
                "explanation": rewrite.explanation,
                "compile_args": list(rewrite.compile_args),
                "targets": None if rewrite.targets is None else list(rewrite.targets),
                "context": None if context is None else _context_json(context),
                "statistics": rewrite.statistics,
                "model": rewrite.model,
                "trace": rewrite.trace,
                "state": rewrite.state.value,
            }
        )
    return {"format": FORMAT, "version": VERSION, "rewrites": entries}


def _context_json(context: CompileContext) -> dict[str, Any]:
    return {
        "compiler_version": context.compiler_version,
        "host_compiler": context.host_compiler,
        "flags": list(context.flags),
        "nvcc_env": [list(pair) for pair in context.nvcc_env],
        "file_hash": context.file_hash,
        "targets": list(context.targets),
    }
