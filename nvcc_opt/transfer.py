"""`nvcc-opt import` and `export`: rewrites as JSON, so teams can share them.

Import checks the whole file before it writes anything: every bad entry (compile_args outside
nvcc_opt.flags' allowlist included) is reported with the file and the line the entry starts on,
and then nothing is stored. Imported rewrites always arrive as *proposed*, whatever state they
had where they were exported.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from nvcc_opt import flags
from nvcc_opt.records import CompileContext, NewRewrite, RegionSpan, Rewrite, RewriteState
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store

FORMAT = "nvcc-opt/rewrites"
VERSION = 1
HEX = frozenset("0123456789abcdef")


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
    rewrites: list[RewriteIn]

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
    created: bool
    warning: str


def _skip(text: str, index: int, chars: str = " \t\r\n,") -> int:
    while index < len(text) and text[index] in chars:
        index += 1
    return index


def entry_lines(text: str) -> list[int]:
    """The line each element of the top-level `rewrites` array starts on (text is valid JSON)."""
    decoder = json.JSONDecoder()
    index = _skip(text, 0)
    if not text.startswith("{", index):
        return []
    index += 1
    while (index := _skip(text, index)) < len(text) and text[index] != "}":
        key, index = decoder.raw_decode(text, index)
        index = _skip(text, index, " \t\r\n:")
        if key == "rewrites" and text.startswith("[", index):
            return _element_lines(text, index + 1)
        _, index = decoder.raw_decode(text, index)
    return []


def _element_lines(text: str, index: int) -> list[int]:
    decoder = json.JSONDecoder()
    lines: list[int] = []
    while (index := _skip(text, index)) < len(text) and text[index] != "]":
        lines.append(text.count("\n", 0, index) + 1)
        _, index = decoder.raw_decode(text, index)
    return lines


def parse_bundle(path: Path) -> tuple[Bundle, list[int]]:
    """The validated file and the line of each entry; ImportFileError for anything wrong."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportFileError(f"{path}: cannot read: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportFileError(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    lines = entry_lines(text)
    try:
        return Bundle.model_validate(data), lines
    except ValidationError as exc:
        raise ImportFileError(_describe(path, lines, exc)) from exc


def _describe(path: Path, lines: list[int], exc: ValidationError) -> str:
    problems = []
    for error in exc.errors():
        loc = error["loc"]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        line = 1
        if len(loc) > 1 and loc[0] == "rewrites" and isinstance(loc[1], int):
            line = lines[loc[1]] if loc[1] < len(lines) else 1
        message = "expected a JSON object" if error["type"] == "model_type" else error["msg"]
        problems.append(f"{path}:{line}: {where or 'top level'}: {message}")
    return "\n".join(problems)


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


def resolve(store: Store, entry: RewriteIn, root: Path, where: str) -> tuple[NewRewrite, str]:
    """Bind an entry to a region of its file: (new rewrite, warning or ""), or ImportFileError.

    An entry names the region by name or text hash; `region_hash`, when given, keeps the text the
    rewrite was made for, so a rewrite for other text is stored for that text (never applied
    to the region as it is now).
    """
    file = (root / entry.file).resolve()
    if not file.is_file():
        raise ImportFileError(f"{where}: file not found: {file}")
    regions = scan(file.read_bytes()).regions
    match = _match(entry, regions)
    given = entry.region_hash or ""
    if len(match) > 1:
        raise ImportFileError(f"{where}: region {entry.region!r} is ambiguous in {file}")
    if match:
        name, digest = match[0].name, match[0].text_hash
        warning = ""
        if given and given != digest:
            digest = given
            warning = f"{where}: made for other text of {name!r}; it applies once they match"
    elif _is_hash(given or entry.region, 64):
        digest = given or entry.region.lower()
        name = entry.region_name or _name_seen(store, file, digest) or entry.region
        warning = f"{where}: region text differs from {file} now; it applies once they match"
    else:
        known = ", ".join(r.name for r in regions) or "none"
        raise ImportFileError(f"{where}: no region {entry.region!r} in {file} (regions: {known})")
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


def import_file(store: Store, path: Path, root: Path) -> list[Imported]:
    """Check every entry of `path`, then store them all as proposed (or none, on any error)."""
    bundle, lines = parse_bundle(path)
    resolved: list[tuple[NewRewrite, str]] = []
    problems: list[str] = []
    for index, entry in enumerate(bundle.rewrites):
        line = lines[index] if index < len(lines) else 1
        where = f"{path}:{line}: rewrites[{index}]"
        # the entry's own targets, when it names them, are the only ones it can ever apply to
        problems += [f"{where}: {r}" for r in flags.refused(entry.compile_args, entry.targets)]
        try:
            resolved.append(resolve(store, entry, root, where))
        except ImportFileError as exc:
            problems.append(str(exc))
    if problems:
        raise ImportFileError("\n".join(problems))
    stored = store.add_rewrites([new for new, _ in resolved])
    return [
        Imported(rewrite, created, warning)
        for (rewrite, created), (_, warning) in zip(stored, resolved, strict=True)
    ]


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
