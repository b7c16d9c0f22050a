"""One declaration per tool: a typed function whose docstring and hints give the model's schema.

A tool is a function (usually a method of a context object such as `ProjectFiles`) marked with
`@tool`, with type hints on every parameter and a Google-style docstring: the first paragraph
describes it, `Args:` describes each parameter, `Returns:` what comes back. From that one
declaration come the JSON schema (OpenAI function-tool format), the text for a prompt, and argument
validation. Tools never raise to their caller: a bad call, a `ToolError` or an unexpected exception
becomes an observation that starts with "error: " and says what to do next.
"""

from __future__ import annotations

import difflib
import inspect
import json
import re
import typing
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, create_model

from nvcc_opt.toolbox.output import cap

F = TypeVar("F", bound=Callable[..., str])
ERROR = "error: "
_MARK = "__nvcc_opt_tool__"
_NOUNS = {
    "integer": "an integer",
    "string": "a string",
    "boolean": "true or false",
    "number": "a number",
}


class ToolError(Exception):
    """A problem the model can fix; the message says what to do next."""


def tool(func: F) -> F:
    """Mark `func` (a function or a method) as a tool; `Toolbox.from_objects` collects methods."""
    setattr(func, _MARK, True)
    return func


def is_error(observation: str) -> bool:
    """Whether an observation reports a failed call (for traces, rewards and exit codes)."""
    return observation.startswith(ERROR)


@dataclass(frozen=True)
class Tool:
    """A callable tool with its schema; build it with `Tool.from_function`."""

    name: str
    description: str
    returns: str
    parameters: dict[str, Any]
    arguments: type[BaseModel]
    func: Callable[..., str]

    @classmethod
    def from_function(cls, func: Callable[..., str]) -> Tool:
        """The tool declared by `func`; raises TypeError when the declaration is incomplete."""
        name = func.__name__
        doc = _parse_doc(inspect.getdoc(func) or "")
        if not doc.summary:
            raise TypeError(f"tool {name}: needs a docstring")
        hints = typing.get_type_hints(func)
        fields: dict[str, Any] = {}
        for param in inspect.signature(func).parameters.values():
            if param.kind not in (param.POSITIONAL_OR_KEYWORD, param.KEYWORD_ONLY):
                raise TypeError(f"tool {name}: *args and **kwargs cannot be described to a model")
            if param.name not in hints or param.name not in doc.args:
                raise TypeError(f"tool {name}: '{param.name}' needs a type hint and an Args: entry")
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                hints[param.name],
                Field(default, description=doc.args[param.name]),
            )
        config = ConfigDict(extra="forbid")
        arguments = create_model(f"{name}_arguments", __config__=config, **fields)
        parameters = _without_titles(arguments.model_json_schema())
        return cls(name, doc.summary, doc.returns, parameters, arguments, func)

    def schema(self) -> dict[str, Any]:
        """The OpenAI function-tool schema."""
        function = {"name": self.name, "description": self.description}
        return {"type": "function", "function": {**function, "parameters": self.parameters}}

    def signature(self) -> str:
        """`name(arg: type, arg: type = default)`, as a prompt or an error message shows it."""
        required = set(self.parameters.get("required", []))
        args = []
        for arg, prop in self.parameters["properties"].items():
            default = "" if arg in required else f" = {json.dumps(prop.get('default'))}"
            args.append(f"{arg}: {type_text(prop)}{default}")
        return f"{self.name}({', '.join(args)})"

    def prompt_text(self) -> str:
        """The signature, the description, each argument's description and what comes back."""
        lines = [self.signature(), f"    {self.description}"]
        for arg, prop in self.parameters["properties"].items():
            lines.append(f"    {arg}: {prop.get('description', '')}")
        if self.returns:
            lines.append(f"    Returns: {self.returns}")
        return "\n".join(lines)

    def invoke(self, args: Mapping[str, Any]) -> str:
        """Validate `args`, run the tool and return its capped output, or an error observation."""
        try:
            valid = self.arguments.model_validate(dict(args))
        except ValidationError as exc:
            return self._bad_arguments(exc, args)
        try:
            return cap(self.func(**dict(valid)))
        except ToolError as exc:
            return f"{ERROR}{exc}"
        except Exception as exc:  # a tool's failure is an observation, never a crash of the loop
            reason = exc.strerror if isinstance(exc, OSError) else str(exc)  # no host paths
            return (
                f"{ERROR}{self.name} failed: {type(exc).__name__}: {reason}. "
                "Try other arguments or another tool."
            )

    def _bad_arguments(self, exc: ValidationError, args: Mapping[str, Any]) -> str:
        problems: dict[str, str] = {}
        for error in exc.errors():
            arg = str(error["loc"][0]) if error["loc"] else "?"
            if arg in problems:
                continue  # a union reports once per member; one line per argument is enough
            if error["type"] == "missing":
                problems[arg] = f"missing required argument '{arg}'"
            elif error["type"] == "extra_forbidden":
                problems[arg] = f"unknown argument '{arg}'"
            else:
                expected = type_text(self.parameters["properties"].get(arg, {}))
                expected = _NOUNS.get(expected, expected)
                problems[arg] = f"argument '{arg}' must be {expected}, got {_show(args.get(arg))}"
        return f"{ERROR}{'; '.join(problems.values())}. Call again as {self.signature()}"


class Toolbox:
    """Tools by name: schemas for the model, and `call`, which turns every failure into text."""

    def __init__(self, tools: Iterable[Tool]) -> None:
        self.tools: dict[str, Tool] = {}
        for one in tools:
            if one.name in self.tools:
                raise ValueError(f"two tools are named {one.name}")
            self.tools[one.name] = one

    @classmethod
    def from_objects(cls, *contexts: object) -> Toolbox:
        """The `@tool` methods of each context object, bound to it, in definition order."""
        found = []
        for context in contexts:
            names = dict.fromkeys(n for k in reversed(type(context).__mro__) for n in vars(k))
            for attr in names:
                if getattr(getattr(type(context), attr, None), _MARK, False):
                    found.append(Tool.from_function(getattr(context, attr)))
        return cls(found)

    @property
    def names(self) -> list[str]:
        return list(self.tools)

    def select(self, names: Iterable[str] | None) -> list[Tool]:
        """The named tools (all when `names` is None); ValueError for an unknown name."""
        if names is None:
            return list(self.tools.values())
        unknown = [n for n in names if n not in self.tools]
        if unknown:
            raise ValueError(f"unknown tools {unknown}; available: {', '.join(self.tools)}")
        return [self.tools[n] for n in names]

    def schemas(self, names: Iterable[str] | None = None) -> list[dict[str, Any]]:
        return [t.schema() for t in self.select(names)]

    def prompt_text(self, names: Iterable[str] | None = None) -> str:
        return "\n\n".join(t.prompt_text() for t in self.select(names))

    def call(self, name: str, args_json: str | Mapping[str, Any]) -> str:
        """Run tool `name` on JSON (or already parsed) arguments; always returns an observation."""
        found = self.tools.get(name)
        if found is None:
            close = difflib.get_close_matches(name, self.tools, n=1)
            hint = f" Did you mean {close[0]}?" if close else ""
            return f"{ERROR}there is no tool named {name!r}.{hint} Tools: {', '.join(self.tools)}."
        args: object = args_json
        if isinstance(args_json, str):
            try:
                args = json.loads(args_json) if args_json.strip() else {}
            except json.JSONDecodeError as exc:
                return f"{ERROR}the arguments are not valid JSON ({exc}). {_send_object(found)}"
        if not isinstance(args, Mapping):
            return f"{ERROR}the arguments must be a JSON object. {_send_object(found)}"
        return found.invoke(args)


def type_text(schema: Mapping[str, Any]) -> str:
    """A JSON schema as a short type: `integer | null`, `list[string]`, `"head" | "both"`."""
    if "enum" in schema:
        return " | ".join(json.dumps(v) for v in schema["enum"])
    if "const" in schema:
        return json.dumps(schema["const"])
    if "anyOf" in schema:
        return " | ".join(type_text(s) for s in schema["anyOf"])
    kinds = schema.get("type", "any")
    if kinds == "array":
        return f"list[{type_text(schema.get('items', {}))}]"
    return " | ".join(kinds) if isinstance(kinds, list) else str(kinds)


def _send_object(target: Tool) -> str:
    return f"Send one JSON object whose keys are the argument names: {target.signature()}"


def _show(value: object) -> str:
    text = json.dumps(value, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."


def _without_titles(schema: dict[str, Any]) -> dict[str, Any]:
    """Pydantic's schema without its generated titles, which only cost the model tokens."""
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title":
            continue
        if key in ("properties", "$defs"):
            out[key] = {k: _without_titles(v) for k, v in value.items()}
        elif key in ("anyOf", "oneOf", "allOf", "prefixItems"):
            out[key] = [_without_titles(v) for v in value]
        elif key == "items" and isinstance(value, dict):
            out[key] = _without_titles(value)
        else:
            out[key] = value
    return out


_SECTION = re.compile(r"(Args|Returns|Raises|Examples?|Notes?):\s*(.*)")
_ARG = re.compile(r"(\w+)\s*(?:\([^)]*\))?:\s*(.*)")


@dataclass(frozen=True)
class _Doc:
    summary: str
    args: dict[str, str]
    returns: str


def _parse_doc(doc: str) -> _Doc:
    """A Google-style docstring: first paragraph, `Args:` entries, `Returns:` text."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in doc.splitlines():
        header = _SECTION.fullmatch(line)
        if header:
            current = header[1]
            sections[current] = [header[2]] if header[2] else []
        else:
            sections[current].append(line)
    summary = "\n".join(sections[""]).strip().split("\n\n")[0]
    returns = " ".join(sections.get("Returns", [])).split()
    return _Doc(" ".join(summary.split()), _parse_args(sections.get("Args", [])), " ".join(returns))


def _parse_args(lines: list[str]) -> dict[str, str]:
    """`name (type): text` entries; deeper-indented lines continue the entry above."""
    indents = [len(line) - len(line.lstrip()) for line in lines if line.strip()]
    entries: dict[str, str] = {}
    name = ""
    for line in lines:
        entry = _ARG.fullmatch(line.strip())
        if entry and indents and len(line) - len(line.lstrip()) == indents[0]:
            name = entry[1]
            entries[name] = entry[2]
        elif name and line.strip():
            entries[name] += " " + line.strip()
    return entries
