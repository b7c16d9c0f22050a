"""Read what a CMake build tree compiles, through CMake's File API (codemodel v2, cache v2).

`write_query` must run before CMake configures the build tree; `read_reply` then reads the
newest reply. Only what nvcc-opt needs is kept: targets, their sources with the language and
flags they are compiled with, artifacts, and the cache entries. Paths come back absolute.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path
from typing import TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

CLIENT = "client-nvcc-opt"
QUERY = {"requests": [{"kind": "codemodel", "version": 2}, {"kind": "cache", "version": 2}]}

# nvcc's target options, with their value in the same argument or the next one.
_ARCH_FLAG = re.compile(
    r"^(?:-arch|--gpu-architecture|-gencode|--generate-code|-code|--gpu-code)(?:=|$)"
)
# Architecture numbers inside their values: compute_90, sm_90a, sm_100f.
_ARCH_NUMBER = re.compile(r"\b(?:sm|compute)_(\d+[a-z]?)\b")


class CMakeApiError(Exception):
    """The File API reply is missing or cannot be read; the message names the file."""


def _reply_dir(build_dir: Path) -> Path:
    return build_dir / ".cmake" / "api" / "v1" / "reply"


def write_query(build_dir: Path) -> None:
    """Ask CMake for codemodel v2 and cache v2 replies at its next configure of `build_dir`."""
    query_dir = build_dir / ".cmake" / "api" / "v1" / "query" / CLIENT
    query_dir.mkdir(parents=True, exist_ok=True)
    (query_dir / "query.json").write_text(json.dumps(QUERY, indent=2) + "\n")


class CompileGroup(BaseModel):
    """How a group of a target's sources is compiled."""

    model_config = ConfigDict(frozen=True)

    language: str
    flags: tuple[str, ...]
    defines: tuple[str, ...]
    includes: tuple[Path, ...]
    standard: str | None
    cuda_architectures: tuple[str, ...]  # e.g. ("90",), from the flags; empty outside CUDA


class SourceInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    path: Path
    language: str | None  # None: not compiled (headers, say)
    compile_group: int | None
    generated: bool


class TargetInfo(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str
    type: str  # EXECUTABLE, STATIC_LIBRARY, SHARED_LIBRARY, OBJECT_LIBRARY, UTILITY, ...
    source_dir: Path
    build_dir: Path
    artifacts: list[Path]
    sources: list[SourceInfo]
    compile_groups: list[CompileGroup]

    def group_for(self, source: SourceInfo) -> CompileGroup | None:
        return None if source.compile_group is None else self.compile_groups[source.compile_group]


class CodeModel(BaseModel):
    model_config = ConfigDict(frozen=True)

    source_dir: Path
    build_dir: Path
    generator: str
    configuration: str  # the first one; multi-config generators have several
    targets: list[TargetInfo]
    cache: dict[str, str]

    def cuda_sources(self) -> list[Path]:
        """Every source compiled as CUDA by some target, sorted, each once."""
        return sorted({s.path for t in self.targets for s in t.sources if s.language == "CUDA"})

    def target_for_source(self, path: Path) -> TargetInfo | None:
        """The first target that compiles `path` (absolute, or relative to the source dir)."""
        wanted = (self.source_dir / path).resolve()
        for target in self.targets:
            if any(s.path == wanted and s.compile_group is not None for s in target.sources):
                return target
        return None


class _Raw(BaseModel):
    model_config = ConfigDict(extra="ignore", populate_by_name=True)


class _Version(_Raw):
    major: int


class _Object(_Raw):
    kind: str
    version: _Version
    json_file: str = Field(alias="jsonFile")


class _Generator(_Raw):
    name: str


class _CMake(_Raw):
    generator: _Generator


class _Index(_Raw):
    cmake: _CMake
    objects: list[_Object]


class _Paths(_Raw):
    source: str
    build: str


class _TargetRef(_Raw):
    json_file: str = Field(alias="jsonFile")


class _Configuration(_Raw):
    name: str
    targets: list[_TargetRef]


class _Codemodel(_Raw):
    paths: _Paths
    configurations: list[_Configuration] = Field(min_length=1)


class _Fragment(_Raw):
    fragment: str


class _Define(_Raw):
    define: str


class _Include(_Raw):
    path: str


class _Standard(_Raw):
    standard: str


class _CompileGroup(_Raw):
    language: str
    fragments: list[_Fragment] = Field(default=[], alias="compileCommandFragments")
    defines: list[_Define] = []
    includes: list[_Include] = []
    language_standard: _Standard | None = Field(default=None, alias="languageStandard")


class _Source(_Raw):
    path: str
    compile_group_index: int | None = Field(default=None, alias="compileGroupIndex")
    is_generated: bool = Field(default=False, alias="isGenerated")


class _Artifact(_Raw):
    path: str


class _Target(_Raw):
    name: str
    type: str
    paths: _Paths
    artifacts: list[_Artifact] = []
    sources: list[_Source] = []
    compile_groups: list[_CompileGroup] = Field(default=[], alias="compileGroups")


class _CacheEntry(_Raw):
    name: str
    value: str


class _Cache(_Raw):
    entries: list[_CacheEntry]


_RawT = TypeVar("_RawT", bound=_Raw)


def _load(path: Path, model: type[_RawT]) -> _RawT:
    try:
        return model.model_validate_json(path.read_bytes())
    except OSError as exc:
        raise CMakeApiError(f"cannot read CMake File API reply {path}: {exc.strerror}") from exc
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "file"
        raise CMakeApiError(
            f"invalid CMake File API reply {path}: {where}: {first['msg']}"
        ) from exc


def _newest_index(reply_dir: Path) -> Path:
    # Index names hold their timestamp, so the largest name is the newest reply.
    indexes = sorted(reply_dir.glob("index-*.json"))
    if not indexes:
        raise CMakeApiError(
            f"no CMake File API reply in {reply_dir}: call write_query() on the build dir, "
            "then configure it with CMake (3.14 or newer)"
        )
    return indexes[-1]


def _object_file(index: _Index, kind: str) -> str | None:
    for obj in index.objects:
        if obj.kind == kind and obj.version.major == 2:
            return obj.json_file
    return None


def _architectures(flags: tuple[str, ...]) -> tuple[str, ...]:
    found: list[str] = []
    for previous, flag in zip(("", *flags), flags, strict=False):
        if _ARCH_FLAG.match(previous) or _ARCH_FLAG.match(flag):
            found += _ARCH_NUMBER.findall(flag)
    return tuple(dict.fromkeys(found))


def _split_fragments(fragments: list[_Fragment], target_file: Path) -> tuple[str, ...]:
    try:
        return tuple(arg for f in fragments for arg in shlex.split(f.fragment))
    except ValueError as exc:
        raise CMakeApiError(f"unparsable flags in {target_file}: {exc}") from exc


def _compile_group(raw: _CompileGroup, source_dir: Path, target_file: Path) -> CompileGroup:
    flags = _split_fragments(raw.fragments, target_file)
    return CompileGroup(
        language=raw.language,
        flags=flags,
        defines=tuple(d.define for d in raw.defines),
        includes=tuple((source_dir / i.path).resolve() for i in raw.includes),
        standard=raw.language_standard.standard if raw.language_standard else None,
        cuda_architectures=_architectures(flags) if raw.language == "CUDA" else (),
    )


def _target(raw: _Target, source_dir: Path, build_dir: Path, target_file: Path) -> TargetInfo:
    groups = [_compile_group(g, source_dir, target_file) for g in raw.compile_groups]
    # Sources are relative to the top source dir, artifacts to the top build dir (absolute
    # when outside them); joining keeps absolute paths as they are.
    sources = [
        SourceInfo(
            path=(source_dir / s.path).resolve(),
            language=None
            if s.compile_group_index is None
            else groups[s.compile_group_index].language,
            compile_group=s.compile_group_index,
            generated=s.is_generated,
        )
        for s in raw.sources
    ]
    return TargetInfo(
        name=raw.name,
        type=raw.type,
        source_dir=(source_dir / raw.paths.source).resolve(),
        build_dir=(build_dir / raw.paths.build).resolve(),
        artifacts=[(build_dir / a.path).resolve() for a in raw.artifacts],
        sources=sources,
        compile_groups=groups,
    )


def _read_targets(
    reply_dir: Path, refs: list[_TargetRef], source_dir: Path, build_dir: Path
) -> list[TargetInfo]:
    targets = []
    for ref in refs:
        target_file = reply_dir / ref.json_file
        targets.append(_target(_load(target_file, _Target), source_dir, build_dir, target_file))
    return targets


def read_reply(build_dir: Path) -> CodeModel:
    """Parse the newest File API reply of `build_dir` (configured after `write_query`)."""
    reply_dir = _reply_dir(build_dir)
    index_path = _newest_index(reply_dir)
    index = _load(index_path, _Index)
    codemodel_file = _object_file(index, "codemodel")
    if codemodel_file is None:
        raise CMakeApiError(
            f"{index_path} holds no codemodel v2 reply: call write_query() on the build dir "
            "and configure it again"
        )
    codemodel = _load(reply_dir / codemodel_file, _Codemodel)
    source_dir = Path(codemodel.paths.source).resolve()
    top_build = Path(codemodel.paths.build).resolve()
    configuration = codemodel.configurations[0]
    cache_file = _object_file(index, "cache")
    cache = _load(reply_dir / cache_file, _Cache).entries if cache_file else []
    return CodeModel(
        source_dir=source_dir,
        build_dir=top_build,
        generator=index.cmake.generator.name,
        configuration=configuration.name,
        targets=_read_targets(reply_dir, configuration.targets, source_dir, top_build),
        cache={e.name: e.value for e in cache},
    )
