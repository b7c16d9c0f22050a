"""Reading files that someone else wrote (an import file, the source it names): strictly.

An allowlist, not a list of known bad inputs: a regular file of at most `MAX_BYTES`, strict
UTF-8 without a byte order mark, standard JSON (no NaN or Infinity), no key twice in an object,
integers within 64 bits, finite numbers, at most `MAX_DEPTH` levels of nesting, and strings
(keys too) that are valid Unicode without NUL. Anything else is an `UntrustedError` that says
what is wrong and where (a line, and the path to the value), never an exception from deep
inside json, SQLite or the file system. The shape of the data is for the caller to validate.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

MAX_BYTES = 64 * 1024 * 1024
MAX_DEPTH = 64
INT_MIN, INT_MAX = -(2**63), 2**63 - 1

JsonPath = tuple[str | int, ...]

_BOMS = (
    (b"\xef\xbb\xbf", "a UTF-8 byte order mark (BOM): save it as UTF-8 without one"),
    (b"\xff\xfe", "a UTF-16 byte order mark: save it as UTF-8"),
    (b"\xfe\xff", "a UTF-16 byte order mark: save it as UTF-8"),
)
_KINDS = (
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
)
_NOT_UNICODE = re.compile("[\x00\ud800-\udfff]")
_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{}]', re.DOTALL)
_SHOWN_PARTS = 8
_PLAIN_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class UntrustedError(ValueError):
    """What is wrong with an untrusted file: `line` (0: the file as a whole) and `where` (the
    path to the value, () when none) say where."""

    def __init__(self, message: str, line: int = 0, where: JsonPath = ()) -> None:
        super().__init__(message)
        self.message = message
        self.line = line
        self.where = where

    def about(self, file: str | os.PathLike[str]) -> str:
        """One line: `file:line: path: message`."""
        at = f":{self.line}" if self.line else ""
        path = f" {format_path(self.where)}:" if self.where else ""
        return f"{shown(file)}{at}:{path} {self.message}"


def shown(file: str | os.PathLike[str]) -> str:
    """A file name as one printable line: quoted when it holds anything else."""
    name = os.fsdecode(file)
    return name if name.isprintable() and not _NOT_UNICODE.search(name) else ascii(name)


def format_path(where: JsonPath) -> str:
    """`rewrites[0].code`: indices in brackets, plain keys after dots, other keys quoted; a
    deep path cut after its first few parts."""
    parts = []
    for part in where[:_SHOWN_PARTS]:
        if isinstance(part, int):
            parts.append(f"[{part}]")
        elif _PLAIN_KEY.fullmatch(part):
            parts.append(f".{part}")
        else:
            parts.append(f"[{part!r}]")
    if len(where) > _SHOWN_PARTS:
        parts.append(f"... ({len(where)} levels)")
    return "".join(parts).lstrip(".")


def read_regular(path: Path, limit: int = MAX_BYTES) -> bytes:
    """The bytes of `path` if it is a regular file of at most `limit` bytes (never waits on a
    FIFO or a device, never trusts a size that /proc reports)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    except FileNotFoundError as exc:
        raise UntrustedError("file not found") from exc
    except OSError as exc:
        raise UntrustedError(f"cannot read: {exc.strerror}") from exc
    except ValueError as exc:  # a NUL in the name
        raise UntrustedError(f"cannot read: {exc}") from exc
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = next((word for test, word in _KINDS if test(info.st_mode)), "another kind")
            raise UntrustedError(f"not a regular file: {kind}")
        too_large = UntrustedError(f"larger than {limit / (1 << 20):g} MiB: too large to read")
        if info.st_size > limit:
            raise too_large
        chunks: list[bytes] = []
        size = 0
        while chunk := os.read(fd, min(1 << 20, limit + 1 - size)):
            chunks.append(chunk)
            size += len(chunk)
            if size > limit:  # /proc and the like report a size of 0
                raise too_large
        return b"".join(chunks)
    except OSError as exc:
        raise UntrustedError(f"cannot read: {exc.strerror}") from exc
    finally:
        os.close(fd)


def decode_text(data: bytes) -> str:
    """`data` as strict UTF-8 without a byte order mark."""
    for bom, message in _BOMS:
        if data.startswith(bom):
            raise UntrustedError(f"starts with {message}", line=1)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        byte = data[exc.start : exc.start + 1].hex()
        raise UntrustedError(f"not valid UTF-8 (byte 0x{byte}: {exc.reason})", line) from exc


def read_json(path: Path, limit: int = MAX_BYTES) -> tuple[Any, str]:
    """The parsed JSON of `path` and its text, read by every rule above."""
    text = decode_text(read_regular(path, limit))
    return loads(text), text


@dataclass(frozen=True)
class _Bad:
    """What a parse hook found; reported with its path once the whole value is parsed."""

    message: str


def _object(pairs: list[tuple[str, Any]]) -> dict[str, Any] | _Bad:
    result = dict(pairs)
    if len(result) == len(pairs):
        return result
    twice = next(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    return _Bad(f"key {twice!r} appears twice in one object")


def _int(digits: str) -> int | _Bad:
    """Only where an integer has more digits than `int` reads: the plain parse refused it."""
    if len(digits.lstrip("-")) > 19:
        return _Bad(f"integer of {len(digits.lstrip('-'))} digits: outside 64 bits")
    return int(digits)


def _constant(word: str) -> _Bad:
    return _Bad(f"{word} is not JSON")


def loads(text: str) -> Any:
    """Parse `text` by the rules above; UntrustedError (with line and path) for any breach."""
    try:
        data, found, plain = _parse(text)
    except json.JSONDecodeError as exc:
        raise UntrustedError(f"invalid JSON: {exc.msg}", exc.lineno) from exc
    except RecursionError as exc:
        raise UntrustedError(f"nested deeper than {MAX_DEPTH} levels", _deep_line(text)) from exc
    if found:
        where, problem = found
        # plain json skips what the hooks would: fast, but only where it read the whole text
        decoder = json.JSONDecoder() if plain else _decoder()
        raise UntrustedError(problem, _line(text, _start(text, where, decoder)), where)
    return data


def _parse(text: str) -> tuple[Any, tuple[JsonPath, str] | None, bool]:
    """(data, first problem or None, whether plain json read it).

    The first parse runs at C speed with plain dicts; only a file that breaks a rule that parse
    cannot see (a key twice: fewer keys parsed than the text holds; an integer longer than
    `int` reads) is parsed again with hooks that name what is wrong."""
    try:
        data = json.loads(text, parse_constant=_constant)
    except json.JSONDecodeError:
        raise
    except ValueError:  # an integer longer than `int` reads
        pass
    else:
        found, keys = _first_problem(data)
        if found is not None or keys == _keys_in(text):
            return data, found, True
    data = _decoder().decode(text)
    return data, _first_problem(data)[0], False


def _keys_in(text: str) -> int:
    """How many object keys JSON `text` holds: a colon outside strings follows each key."""
    return _STRING.sub("", text).count(":")


def _first_problem(data: Any) -> tuple[tuple[JsonPath, str] | None, int]:
    """A value or key that breaks a rule, with its path (None if all keep them), and how many
    keys the objects hold. No recursion; memory in proportion to the depth; a path is built
    only for what is reported."""
    if type(data) is not dict and type(data) is not list:
        problem = _value_problem(data)
        return ((), problem) if problem else None, 0
    keys = 0
    # (parent's link, key) links: a path is unwound from them only when reported
    stack: list[tuple[_Link, int, Any]] = [(None, 0, data)]
    while stack:
        link, depth, container = stack.pop()
        keyed = type(container) is dict
        keys += len(container) if keyed else 0
        for key, value in container.items() if keyed else enumerate(container):
            kind = type(value)
            if (kind is dict or kind is list) and depth + 1 < MAX_DEPTH:
                problem = _value_problem(key) if keyed else ""
                if value and not problem:
                    stack.append(((link, key), depth + 1, value))
            elif kind is dict or kind is list:
                problem = f"nested deeper than {MAX_DEPTH} levels"
            else:
                problem = (_value_problem(key) if keyed else "") or _value_problem(value)
            if problem:
                return (_path((link, key)), problem), keys
    return None, keys


_Link = tuple[Any, str | int] | None


def _path(link: _Link) -> JsonPath:
    parts: list[str | int] = []
    while link is not None:
        link, part = link
        parts.append(part)
    return tuple(reversed(parts))


def _value_problem(value: Any) -> str:
    kind = type(value)
    if kind is str:
        found = _NOT_UNICODE.search(value)
        if found is None:
            return ""
        if found.group() == "\x00":
            return "text holds a NUL character (\\u0000)"
        return f"text holds a lone surrogate (\\u{ord(found.group()):04x}): not valid Unicode"
    if kind is int and not INT_MIN <= value <= INT_MAX:
        return f"integer {value} is outside 64 bits"
    if kind is float and math.isinf(value):
        return "number too large for a 64-bit float"
    if kind is _Bad:
        return str(value.message)
    return ""


def line_of(text: str, where: JsonPath) -> int:
    """The line of the value at `where` in `text` (JSON that `loads` accepted), or of the
    deepest part of that path that exists."""
    return _line(text, _start(text, where, json.JSONDecoder()))


def element_lines(text: str, where: JsonPath) -> list[int]:
    """The line each element of the array at `where` starts on; [] if that is not an array.
    For text that `loads` accepted (so plain json reads it, at C speed)."""
    decoder = json.JSONDecoder()
    index = _start(text, where, decoder)
    if not text.startswith("[", index):
        return []
    lines = []
    index = _skip(text, index + 1)
    line, counted = _line(text, index), index
    while not text.startswith("]", index):
        line += text.count("\n", counted, index)  # from the last element on: linear time
        lines.append(line)
        counted = index
        index = _skip(text, decoder.raw_decode(text, index)[1], " \t\r\n,")
    return lines


def _decoder() -> json.JSONDecoder:
    # every hook: a value that `loads` reported never raises here
    return json.JSONDecoder(object_pairs_hook=_object, parse_int=_int, parse_constant=_constant)


def _line(text: str, index: int) -> int:
    return text.count("\n", 0, index) + 1


def _start(text: str, where: JsonPath, decoder: json.JSONDecoder) -> int:
    index = _skip(text, 0)
    for part in where:
        inner = _find(text, index, part, decoder)
        if inner is None:
            break
        index = inner
    return index


def _find(text: str, index: int, part: str | int, decoder: json.JSONDecoder) -> int | None:
    """Where the member `part` of the array or object at `index` starts, or None."""
    if text.startswith("[", index) and isinstance(part, int):
        index = _skip(text, index + 1)
        for _ in range(part):
            if text.startswith("]", index):
                return None
            index = _skip(text, decoder.raw_decode(text, index)[1], " \t\r\n,")
        return None if text.startswith("]", index) else index
    if text.startswith("{", index) and isinstance(part, str):
        index = _skip(text, index + 1)
        while not text.startswith("}", index):
            key, index = decoder.raw_decode(text, index)
            index = _skip(text, index, " \t\r\n:")
            if key == part:
                return index
            index = _skip(text, decoder.raw_decode(text, index)[1], " \t\r\n,")
    return None


def _skip(text: str, index: int, chars: str = " \t\r\n") -> int:
    while index < len(text) and text[index] in chars:
        index += 1
    return index


def _deep_line(text: str) -> int:
    """The line where `text` first nests deeper than MAX_DEPTH (brackets in strings aside)."""
    depth = 0
    for token in _TOKEN.finditer(text):
        if token.group() in ("[", "{"):
            depth += 1
            if depth > MAX_DEPTH:
                return _line(text, token.start())
        elif token.group() in ("]", "}"):
            depth -= 1
    return 1
