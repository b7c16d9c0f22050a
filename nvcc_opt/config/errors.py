"""Validation errors as `file:line: [table] key: what is allowed`.

tomllib keeps no positions, so the line of a key is found in the file's text by a small scan of
table headers and `key =` lines (best effort: a key that is not in the file, such as a missing
required one, is reported at its table's header, else line 1).
"""

from __future__ import annotations

import difflib
import json
import re
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ValidationError

from nvcc_opt.config.model import KEY_ERROR

_PART = r'(?:[A-Za-z0-9_-]+|"[^"\n]*"|\'[^\'\n]*\')'
_DOTTED = rf"{_PART}(?:\s*\.\s*{_PART})*"
_HEADER = re.compile(rf"^\s*\[\[?\s*({_DOTTED})\s*\]\]?")
_KEY = re.compile(rf"^\s*({_DOTTED})\s*=")
_TOML_LINE = re.compile(r"\s*\(at line (\d+), column \d+\)\s*$")


def _parts(dotted: str) -> tuple[str, ...]:
    return tuple(p.strip().strip("\"'") for p in re.findall(_PART, dotted))


def key_lines(text: str) -> dict[tuple[str, ...], int]:
    """The first line (1-based) of every table header and key, by full dotted path."""
    found: dict[tuple[str, ...], int] = {}
    table: tuple[str, ...] = ()
    in_string = False
    for number, line in enumerate(text.splitlines(), start=1):
        if in_string:
            in_string = (line.count('"""') + line.count("'''")) % 2 == 0
            continue
        if header := _HEADER.match(line):
            table = _parts(header.group(1))
            found.setdefault(table, number)
        elif key := _KEY.match(line):
            found.setdefault((*table, *_parts(key.group(1))), number)
            in_string = (line.count('"""') + line.count("'''")) % 2 == 1
    return found


def line_of(text: str, path: tuple[str, ...]) -> int:
    """The line of `path`, else of its nearest enclosing table or key that is in the file."""
    lines = key_lines(text)
    for end in range(len(path), 0, -1):
        # A dotted key (`env.X = 1`) or subtable header also places the table it is inside.
        found = [line for key, line in lines.items() if key[:end] == path[:end]]
        if found:
            return min(found)
    return 1


def describe_toml_error(file: Path, exc: tomllib.TOMLDecodeError) -> str:
    message = str(exc)
    match = _TOML_LINE.search(message)
    line = int(match.group(1)) if match else 1
    return f"{file}:{line}: invalid TOML: {_TOML_LINE.sub('', message)}"


def describe(
    file: Path, text: str, prefix: tuple[str, ...], exc: ValidationError, model: type[BaseModel]
) -> str:
    """One `file:line: [table] key: problem` line per error."""
    problems: list[tuple[int, str]] = []
    for error in exc.errors():
        loc = tuple(error["loc"])
        if error["type"] == KEY_ERROR:
            loc = (*loc, error["ctx"]["key"])
        names = tuple(str(p) for p in loc if isinstance(p, str))
        line = line_of(text, (*prefix, *names))
        problems.append((line, f"{_label(prefix, loc, model)}: {_message(error, model)}"))
    return "\n".join(f"{file}:{line}: {problem}" for line, problem in sorted(problems))


def _label(prefix: tuple[str, ...], loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    """`[time] source`, `[check] require[1]`, `[run] env.CUDA_VISIBLE_DEVICES`, `store`."""
    table = list(prefix)
    rest = list(loc)
    if rest and _child_model(model, rest[0]) is not None:
        table.append(str(rest.pop(0)))
    key = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in rest).lstrip(".")
    head = f"[{'.'.join(table)}]" if table else ""
    return " ".join(part for part in (head, key) if part) or "top level"


_TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "tuple": "an array",
    "list": "an array",
}


def _message(error: Any, model: type[BaseModel]) -> str:
    kind, ctx, given = error["type"], error.get("ctx", {}), error.get("input")
    if kind == KEY_ERROR:
        return str(ctx["why"])
    if kind == "literal_error":
        expected = str(ctx["expected"]).replace("'", '"')
        return f"must be one of {expected} (got {_show(given)})"
    if kind == "extra_forbidden":
        return _unknown_key(error["loc"], model)
    if kind in ("model_type", "dict_type"):
        return f"must be a table (got {_show(given)})"
    word = _TYPE_WORDS.get(kind.partition("_")[0])
    if word and kind.endswith(("_type", "_parsing")):
        return f"must be {word} (got {_show(given)})"
    message = str(error["msg"]).removeprefix("Value error, ")
    if kind.startswith(("greater", "less")):
        message = message.replace("Input should be", "must be") + f" (got {_show(given)})"
    return message


def _unknown_key(loc: tuple[Any, ...], model: type[BaseModel]) -> str:
    parent: type[BaseModel] | None = model
    for part in loc[:-1]:
        parent = _child_model(parent, part) if parent is not None else None
    if parent is None:
        return "unknown key"
    allowed = list(parent.model_fields)
    close = difflib.get_close_matches(str(loc[-1]), allowed, n=1)
    hint = f"did you mean {close[0]}? " if close else ""
    return f"unknown key; {hint}allowed here: {', '.join(allowed)}"


def _child_model(model: type[BaseModel], name: object) -> type[BaseModel] | None:
    field = model.model_fields.get(name) if isinstance(name, str) else None
    annotation = field.annotation if field is not None else None
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return annotation
    return None


def _show(value: object) -> str:
    """A value as TOML would spell it, briefly."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, dict):
        return "a table"
    if isinstance(value, list):
        return "an array"
    return json.dumps(value) if isinstance(value, str) else str(value)
