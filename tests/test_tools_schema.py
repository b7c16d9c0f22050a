"""Tool declarations -> schemas, prompt text and argument validation; output caps."""

from __future__ import annotations

import json
from typing import Literal

import pytest

from nvcc_opt.toolbox.output import cap
from nvcc_opt.toolbox.schema import Tool, Toolbox, ToolError, is_error, tool


class Context:
    """A context object whose methods are tools, as ProjectFiles is."""

    def __init__(self) -> None:
        self.calls: list[dict[str, object]] = []

    @tool
    def measure(
        self,
        name: str,
        repeats: int = 3,
        limit: int | None = None,
        flags: list[str] | None = None,
        keep: Literal["head", "both"] = "head",
        verbose: bool = False,
    ) -> str:
        """Measure a kernel by name.

        This paragraph is guidance for people, not the model's description.

        Args:
            name: The kernel's name.
            repeats (int): How many runs,
                at least one.
            limit: Stop after this many.
            flags: Extra compiler flags.
            keep: Which part of the log to keep.
            verbose: Whether to say more.

        Returns:
            The median time in ms.
        """
        self.calls.append(
            dict(name=name, repeats=repeats, limit=limit, flags=flags, keep=keep, verbose=verbose)
        )
        return f"{name}: {repeats} runs"

    @tool
    def fail(self, kind: str) -> str:
        """Fail in the way asked.

        Args:
            kind: "tool", "os", "bug" or "empty".
        """
        if kind == "tool":
            raise ToolError("the kernel is not built yet; call build first")
        if kind == "os":
            raise FileNotFoundError(2, "No such file or directory", "/host/secret/path")
        if kind == "bug":
            raise KeyError("oops")
        if kind == "big":
            return "x\n" * 10_000
        return ""

    def helper(self) -> str:
        """Not a tool: no @tool mark."""
        return ""


@pytest.fixture
def box() -> Toolbox:
    return Toolbox.from_objects(Context())


def test_schema_from_hints_and_docstring(box: Toolbox) -> None:
    schema = box.schemas(["measure"])[0]
    assert schema["type"] == "function"
    function = schema["function"]
    assert function["name"] == "measure"
    assert function["description"] == "Measure a kernel by name."
    assert function["parameters"] == {
        "type": "object",
        "additionalProperties": False,
        "required": ["name"],
        "properties": {
            "name": {"type": "string", "description": "The kernel's name."},
            "repeats": {
                "type": "integer",
                "default": 3,
                "description": "How many runs, at least one.",
            },
            "limit": {
                "anyOf": [{"type": "integer"}, {"type": "null"}],
                "default": None,
                "description": "Stop after this many.",
            },
            "flags": {
                "anyOf": [{"type": "array", "items": {"type": "string"}}, {"type": "null"}],
                "default": None,
                "description": "Extra compiler flags.",
            },
            "keep": {
                "type": "string",
                "enum": ["head", "both"],
                "default": "head",
                "description": "Which part of the log to keep.",
            },
            "verbose": {"type": "boolean", "default": False, "description": "Whether to say more."},
        },
    }
    json.dumps(schema)  # what goes to a model must serialize


def test_prompt_text(box: Toolbox) -> None:
    text = box.tools["measure"].prompt_text()
    assert text.splitlines()[0] == (
        "measure(name: string, repeats: integer = 3, limit: integer | null = null, "
        'flags: list[string] | null = null, keep: "head" | "both" = "head", '
        "verbose: boolean = false)"
    )
    assert "    repeats: How many runs, at least one." in text
    assert text.endswith("    Returns: The median time in ms.")
    assert box.prompt_text().count("\n\n") == 1  # two tools, one blank line between


def test_toolbox_collects_marked_methods_in_order(box: Toolbox) -> None:
    assert box.names == ["measure", "fail"]
    assert [s["function"]["name"] for s in box.schemas()] == ["measure", "fail"]
    with pytest.raises(ValueError, match="unknown tools"):
        box.schemas(["nope"])
    with pytest.raises(ValueError, match="two tools are named"):
        Toolbox.from_objects(Context(), Context())


def test_valid_call_reaches_the_function_with_lax_json_values() -> None:
    context = Context()
    box = Toolbox.from_objects(context)
    out = box.call("measure", '{"name": "saxpy", "repeats": "5", "flags": ["-O3"], "keep": "both"}')
    assert out == "saxpy: 5 runs"
    assert context.calls == [
        dict(name="saxpy", repeats=5, limit=None, flags=["-O3"], keep="both", verbose=False)
    ]
    assert box.call("measure", {"name": "k"}) == "k: 3 runs"  # parsed arguments work too


@pytest.mark.parametrize(
    ("args", "says"),
    [
        ({"name": "k", "repeats": "many"}, "argument 'repeats' must be an integer, got \"many\""),
        ({"name": "k", "repeats": 2.5}, "argument 'repeats' must be an integer, got 2.5"),
        ({"name": "k", "limit": "x"}, "argument 'limit' must be integer | null, got \"x\""),
        ({"name": 7}, "argument 'name' must be a string, got 7"),
        ({"name": "k", "flags": ["a", 3]}, "argument 'flags' must be list[string] | null"),
        ({"name": "k", "keep": "tail"}, 'argument \'keep\' must be "head" | "both", got "tail"'),
        ({"name": "k", "verbose": "perhaps"}, "argument 'verbose' must be true or false"),
        ({}, "missing required argument 'name'"),
        ({"name": "k", "repeat": 2}, "unknown argument 'repeat'"),
    ],
)
def test_bad_arguments_say_what_to_fix(box: Toolbox, args: dict[str, object], says: str) -> None:
    out = box.call("measure", json.dumps(args))
    assert is_error(out)
    assert says in out
    assert out.endswith("Call again as " + box.tools["measure"].signature())


def test_union_errors_are_reported_once_per_argument(box: Toolbox) -> None:
    out = box.call("measure", '{"name": "k", "limit": "x", "repeats": "y"}')
    assert out.count("argument 'limit'") == 1
    assert out.count("argument 'repeats'") == 1


@pytest.mark.parametrize(
    ("args_json", "says"),
    [
        ('{"name": "k",}', "the arguments are not valid JSON (Expecting property name"),
        ('["k"]', "the arguments must be a JSON object"),
        ('"k"', "the arguments must be a JSON object"),
    ],
)
def test_malformed_arguments(box: Toolbox, args_json: str, says: str) -> None:
    out = box.call("measure", args_json)
    assert out.startswith("error: " + says)
    assert "measure(name: string" in out


def test_empty_argument_string_means_no_arguments(box: Toolbox) -> None:
    assert box.call("measure", "  ") == box.call("measure", "{}")


def test_unknown_tool_lists_the_available_ones(box: Toolbox) -> None:
    assert box.call("mesure", "{}") == (
        "error: there is no tool named 'mesure'. Did you mean measure? Tools: measure, fail."
    )
    assert box.call("zzz", "{}") == "error: there is no tool named 'zzz'. Tools: measure, fail."


def test_failures_become_observations(box: Toolbox) -> None:
    assert box.call("fail", '{"kind": "tool"}') == (
        "error: the kernel is not built yet; call build first"
    )
    os_error = box.call("fail", '{"kind": "os"}')
    assert os_error.startswith("error: fail failed: FileNotFoundError: No such file or directory.")
    assert "/host" not in os_error
    assert box.call("fail", '{"kind": "bug"}') == (
        "error: fail failed: KeyError: 'oops'. Try other arguments or another tool."
    )


def test_outputs_are_capped_and_empty_says_so(box: Toolbox) -> None:
    assert box.call("fail", '{"kind": "empty"}') == "no output"
    big = box.call("fail", '{"kind": "big"}')
    assert big.endswith("[output cut: 9500 more lines, 19000 more characters]")
    assert not is_error(big)


def test_incomplete_declarations_are_refused() -> None:
    def undocumented(path: str) -> str:
        """Does a thing."""
        return path

    def no_doc(path: str) -> str:
        return path

    def star(*paths: str) -> str:
        """Does a thing.

        Args:
            paths: Paths.
        """
        return ""

    with pytest.raises(TypeError, match="'path' needs a type hint and an Args: entry"):
        Tool.from_function(undocumented)
    with pytest.raises(TypeError, match="needs a docstring"):
        Tool.from_function(no_doc)
    with pytest.raises(TypeError, match=r"\*args"):
        Tool.from_function(star)


def test_a_plain_function_is_a_tool() -> None:
    @tool
    def add(a: int, b: int = 1) -> str:
        """Add two numbers.

        Args:
            a: First.
            b: Second.
        """
        return str(a + b)

    box = Toolbox([Tool.from_function(add)])
    assert box.call("add", '{"a": 2, "b": 3}') == "5"
    assert add(2) == "3"  # the decorator leaves the function callable as before


LINES = "".join(f"line {n}\n" for n in range(1, 21))


def test_cap_within_limits_is_unchanged() -> None:
    assert cap(LINES) == LINES
    assert cap("") == "no output"
    assert cap(" \n\t") == "no output"


def test_cap_keeps_the_head_and_counts_the_rest() -> None:
    assert cap(LINES, limit_lines=3) == (
        "line 1\nline 2\nline 3\n[output cut: 17 more lines, 130 more characters]"
    )
    assert cap(LINES, limit_chars=15) == (
        "line 1\nline 2\n[output cut: 18 more lines, 137 more characters]"
    )
    assert cap("x" * 50, limit_chars=10) == (
        "xxxxxxxxxx\n[output cut: 1 more line, 40 more characters]"
    )


def test_cap_both_keeps_head_and_tail() -> None:
    assert cap(LINES, limit_lines=4, keep="both") == (
        "line 1\nline 2\n[output cut: 16 lines, 121 characters omitted here]\nline 19\nline 20\n"
    )
    out = cap(LINES, limit_chars=30, keep="both")
    assert out.startswith("line 1\nline 2\n[output cut: ")
    assert out.endswith("\nline 20\n")
