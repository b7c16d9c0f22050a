"""`nvcc-opt import` and `export`: rewrites as JSON, so teams can share them.

Import checks the whole file before it writes anything: a bad entry is an error naming the file and
the line the entry starts on, and nothing is stored. Imported rewrites always arrive as *proposed*.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from nvcc_opt.records import CompileContext, NewRewrite, Rewrite, RewriteState
from nvcc_opt.regions.scan import scan
from nvcc_opt.store.api import Store

FORMAT = "nvcc-opt/rewrites"
VERSION = 1
HEX = frozenset("0123456789abcdef")


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
    region_name: str | None = None  # written by export; informative
    region_hash: str | None = None
    state: str | None = None  # written by export; ignored (imports are proposed)


class Bundle(BaseModel):
    model_config = ConfigDict(extra="forbid")
    format: str = FORMAT
    version: int = VERSION
    rewrites: list[RewriteIn]


class ImportError_(ValueError):
    """A bad import file; the message names the file and line."""


@dataclass(frozen=True)
class Imported:
    rewrite: Rewrite
    created: bool
    warning: str


def _entry_lines(text: str) -> list[int]:
    """Line on which each element of the top-level `rewrites` array starts (best effort)."""
    decoder = json.JSONDecoder()
    key = text.find('"rewrites"')
    start = text.find("[", key) if key >= 0 else -1
    lines: list[int] = []
    index = start + 1
    while 0 < index < len(text):
        while index < len(text) and text[index] in " \t\r\n,":
            index += 1
        if index >= len(text) or text[index] == "]":
            break
        lines.append(text.count("\n", 0, index) + 1)
        try:
            _, index = decoder.raw_decode(text, index)
        except json.JSONDecodeError:
            break
    return lines


def parse_bundle(path: Path) -> Bundle:
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ImportError_(f"{path}: cannot read: {exc}") from exc
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ImportError_(f"{path}:{exc.lineno}: invalid JSON: {exc.msg}") from exc
    try:
        return Bundle.model_validate(data)
    except ValidationError as exc:
        raise ImportError_(_describe(path, text, exc)) from exc


def _describe(path: Path, text: str, exc: ValidationError) -> str:
    lines = _entry_lines(text)
    problems = []
    for error in exc.errors():
        loc = error["loc"]
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc).lstrip(".")
        line = 1
        if len(loc) > 1 and loc[0] == "rewrites" and isinstance(loc[1], int) and loc[1] < len(
            lines
        ):
            line = lines[loc[1]]
        problems.append(f"{path}:{line}: {where}: {error['msg']}")
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


def _is_hash(word: str, minimum: int = 8) -> bool:
    return len(word) >= minimum and set(word.lower()) <= HEX


def resolve(entry: RewriteIn, root: Path, where: str) -> tuple[NewRewrite, str]:
    """Match an entry to the region in the current file: (new rewrite, warning or "")."""
    file = (root / entry.file).resolve()
    if not file.is_file():
        raise ImportError_(f"{where}: file not found: {file}")
    regions = scan(file.read_bytes()).regions
    word = entry.region
    match = [r for r in regions if r.name == word] or [
        r for r in regions if _is_hash(word) and r.text_hash.startswith(word.lower())
    ]
    warning = ""
    if len(match) == 1:
        name, digest = match[0].name, match[0].text_hash
        if entry.region_hash and entry.region_hash.lower() != digest:
            digest = entry.region_hash.lower()
            warning = f"{where}: written for other text of {name!r}; it applies once they match"
    elif len(match) > 1:
        raise ImportError_(f"{where}: region {word!r} is ambiguous in {file}")
    elif entry.region_hash and _is_hash(entry.region_hash, 64) or _is_hash(word, 64):
        digest = (entry.region_hash or word).lower()
        name = entry.region_name or word
        warning = f"{where}: region text differs from {file} now; it applies once they match"
    else:
        known = ", ".join(r.name for r in regions) or "none"
        raise ImportError_(f"{where}: no region {word!r} in {file} (regions: {known})")
    rewrite = NewRewrite(
        file=str(file),
        region_name=name,
        region_hash=digest,
        code=entry.code,
        explanation=entry.explanation,
        compile_args=tuple(entry.compile_args),
        targets=None if entry.targets is None else tuple(sorted(entry.targets)),
        context=_context(entry.context),
        statistics=entry.statistics,
        model=entry.model,
        trace=entry.trace,
        origin="import",
    )
    return rewrite, warning


def import_file(store: Store, path: Path, root: Path) -> list[Imported]:
    bundle = parse_bundle(path)
    lines = _entry_lines(path.read_text(encoding="utf-8"))
    resolved = []
    for index, entry in enumerate(bundle.rewrites):
        line = lines[index] if index < len(lines) else 1
        resolved.append(resolve(entry, root, f"{path}:{line}: rewrites[{index}]"))
    results = []
    for new, warning in resolved:
        rewrite, created = store.add_rewrite(new)
        results.append(Imported(rewrite, created, warning))
    return results


def _relative(file: str, root: Path) -> str:
    try:
        return os.path.relpath(file, root) if Path(file).is_relative_to(root) else file
    except ValueError:
        return file


def export(store: Store, states: list[RewriteState], root: Path) -> dict[str, Any]:
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
