"""The value types the launcher's hot path shares with everything else.

Plain slotted classes, immutable, compared and hashed by value, importing nothing: a frozen
dataclass costs about a millisecond of start-up each (the `dataclasses` module itself more), and
every compile of a tagged file pays start-up. `records.py` re-exports them.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


class Value:
    """Immutable after __init__; equal when of one class with equal fields."""

    __slots__: tuple[str, ...] = ()

    def _set(self, **fields: object) -> None:
        for name, value in fields.items():
            object.__setattr__(self, name, value)

    def _fields(self) -> tuple[object, ...]:
        return tuple(getattr(self, name) for name in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot set {name!r}")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"{type(self).__name__} is immutable: cannot delete {name!r}")

    def __eq__(self, other: object) -> bool:
        return (
            isinstance(other, Value)
            and type(other) is type(self)
            and self._fields() == other._fields()
        )

    def __hash__(self) -> int:
        return hash((type(self).__name__, self._fields()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__)
        return f"{type(self).__name__}({shown})"

    def __reduce__(self) -> tuple[Any, tuple[object, ...]]:
        return (type(self), self._fields())  # every __init__ takes the slots in order

    def replace(self, **changes: Any) -> Any:
        """A copy with some fields changed (dataclasses.replace for these classes)."""
        fields = {name: getattr(self, name) for name in self.__slots__}
        unknown = set(changes) - set(fields)
        if unknown:
            raise TypeError(f"{type(self).__name__} has no field {sorted(unknown)[0]!r}")
        return type(self)(**{**fields, **changes})

    def as_dict(self) -> dict[str, object]:
        return {name: getattr(self, name) for name in self.__slots__}


class RegionSpan(Value):
    """One `@optimize` region found in a source file (pure scan result, no I/O).

    Lines are 1-based and inclusive; offsets are byte offsets into the file: `start_offset` is the
    first byte of line `start_line`, `end_offset` is one past the last byte of line `end_line`
    (its line terminator included). `text_hash` is the sha256 hex digest of the region's bytes
    with CRLF normalised to LF.
    """

    __slots__ = (
        "name", "kind", "pragma_line", "start_line", "end_line", "start_offset", "end_offset",
        "text_hash",
    )  # fmt: skip
    name: str
    kind: str  # "function" (pragma above a definition) or "block" (begin/end)
    pragma_line: int
    start_line: int
    end_line: int
    start_offset: int
    end_offset: int
    text_hash: str

    def __init__(
        self,
        name: str,
        kind: str,
        pragma_line: int,
        start_line: int,
        end_line: int,
        start_offset: int,
        end_offset: int,
        text_hash: str,
    ) -> None:
        self._set(
            name=name,
            kind=kind,
            pragma_line=pragma_line,
            start_line=start_line,
            end_line=end_line,
            start_offset=start_offset,
            end_offset=end_offset,
            text_hash=text_hash,
        )


class ScanWarning(Value):
    """A malformed or unmatched pragma: reported as file:line, never fatal."""

    __slots__ = ("line", "message")
    line: int
    message: str

    def __init__(self, line: int, message: str) -> None:
        self._set(line=line, message=message)


class ScanResult(Value):
    __slots__ = ("regions", "warnings")
    regions: tuple[RegionSpan, ...]
    warnings: tuple[ScanWarning, ...]

    def __init__(self, regions: tuple[RegionSpan, ...], warnings: tuple[ScanWarning, ...]) -> None:
        self._set(regions=regions, warnings=warnings)


class CompileContext(Value):
    """What a compile (or a verification) was done with; shown when it changes."""

    __slots__ = ("compiler_version", "host_compiler", "flags", "nvcc_env", "file_hash", "targets")
    compiler_version: str  # last lines of `nvcc --version`
    host_compiler: str  # -ccbin value, or "" for nvcc's default
    flags: tuple[str, ...]  # the compile's flags, without source/output/depfile names
    nvcc_env: tuple[tuple[str, str], ...]  # NVCC_PREPEND_FLAGS / NVCC_APPEND_FLAGS
    file_hash: str  # sha256 of the whole source file
    targets: tuple[str, ...]  # normalised GPU targets, e.g. ("sm_90",)

    def __init__(
        self,
        compiler_version: str = "",
        host_compiler: str = "",
        flags: tuple[str, ...] = (),
        nvcc_env: tuple[tuple[str, str], ...] = (),
        file_hash: str = "",
        targets: tuple[str, ...] = (),
    ) -> None:
        self._set(
            compiler_version=compiler_version,
            host_compiler=host_compiler,
            flags=flags,
            nvcc_env=nvcc_env,
            file_hash=file_hash,
            targets=targets,
        )


class AcceptedRewrite(Value):
    """What the launcher needs to substitute one region (read by the fast path)."""

    __slots__ = ("id", "region_hash", "code", "compile_args", "targets", "suspect")
    id: int
    region_hash: str
    code: str
    compile_args: tuple[str, ...]
    targets: tuple[str, ...] | None
    suspect: str  # non-empty: an earlier substituted compile failed; the launcher skips it

    def __init__(
        self,
        id: int,
        region_hash: str,
        code: str,
        compile_args: tuple[str, ...],
        targets: tuple[str, ...] | None,
        suspect: str = "",
    ) -> None:
        self._set(
            id=id,
            region_hash=region_hash,
            code=code,
            compile_args=compile_args,
            targets=targets,
            suspect=suspect,
        )
