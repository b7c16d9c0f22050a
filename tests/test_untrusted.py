"""nvcc_opt.untrusted at its edges: what is allowed right up to each limit, what is refused just
past it, and where each refusal points."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from nvcc_opt import untrusted
from nvcc_opt.untrusted import MAX_DEPTH, UntrustedError


def _nested(levels: int) -> str:
    return "[" * levels + "]" * levels


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ('{"n": 9223372036854775807}', {"n": 2**63 - 1}),
        ('{"n": -9223372036854775808}', {"n": -(2**63)}),
        ('{"n": 1.5e308}', {"n": 1.5e308}),
        ('{"s": "\\ud83d\\ude00"}', {"s": "\U0001f600"}),  # a surrogate pair is one character
        ('{"s": "\\\\u0000"}', {"s": "\\u0000"}),  # an escaped backslash, then text
        ('{"s": "[[[{{{"}', {"s": "[[[{{{"}),
        ('{"a": 1, "b": {"a": 2}}', {"a": 1, "b": {"a": 2}}),  # one key in two objects
        ('{"a": "x:y\\":", "b:": [{}, []]}', {"a": 'x:y":', "b:": [{}, []]}),  # colons in text
    ],
)
def test_allowed(text: str, value: object) -> None:
    assert untrusted.loads(text) == value


def test_nesting_up_to_the_limit_is_allowed() -> None:
    assert untrusted.loads(_nested(MAX_DEPTH)) is not None
    with pytest.raises(UntrustedError, match="nested deeper than 64 levels"):
        untrusted.loads(_nested(MAX_DEPTH + 1))


@pytest.mark.parametrize(
    ("text", "line", "where", "message"),
    [
        ('{\n"n": 9223372036854775808}', 2, ("n",), "outside 64 bits"),
        ('{\n"n": -9223372036854775809}', 2, ("n",), "outside 64 bits"),
        ('{"a": [1,\n 2,\n -Infinity]}', 3, ("a", 2), "-Infinity is not JSON"),
        ('{"a": {"b": 1,\n "b": 2}}', 1, ("a",), "key 'b' appears twice"),
        ('{"a": "x",\n "\\u0000": 1}', 2, ("\x00",), "NUL"),
        ('[0, 0,\n "\\udfff"]', 2, (2,), "lone surrogate (\\udfff)"),
        ('["\\ud83d x"]', 1, (0,), "lone surrogate (\\ud83d)"),
    ],
)
def test_refused_with_line_and_path(
    text: str, line: int, where: tuple[object, ...], message: str
) -> None:
    with pytest.raises(UntrustedError) as caught:
        untrusted.loads(text)
    assert (caught.value.line, caught.value.where) == (line, where)
    assert message in caught.value.message


def test_a_path_names_keys_and_indices_and_cuts_deep_ones() -> None:
    assert untrusted.format_path(("rewrites", 0, "code")) == "rewrites[0].code"
    assert untrusted.format_path(("a b", 1)) == "['a b'][1]"
    assert untrusted.format_path(("t", *[0] * 20)) == "t[0][0][0][0][0][0][0]... (21 levels)"


def test_lines_of_values_and_elements() -> None:
    data = {"format": "x", "rewrites": [{"a": [1, {"b": 2}]}, {"a": 3}, 4]}
    text = json.dumps(data, indent=2)
    lines = text.splitlines()
    assert untrusted.element_lines(text, ("rewrites",)) == [
        lines.index("    {") + 1,
        len(lines) - lines[::-1].index("    {"),
        lines.index("    4") + 1,
    ]
    assert lines[untrusted.line_of(text, ("rewrites", 0, "a", 1, "b")) - 1].strip() == '"b": 2'
    # a path that goes past what exists stops at the deepest part that does
    starts = untrusted.element_lines(text, ("rewrites",))
    assert untrusted.line_of(text, ("rewrites", 1, "missing")) == starts[1]
    assert untrusted.element_lines(text, ("format",)) == []


def test_read_regular_reads_no_more_than_the_limit(tmp_path: Path) -> None:
    path = tmp_path / "f"
    path.write_bytes(b"x" * 10)
    assert untrusted.read_regular(path, limit=10) == b"x" * 10
    with pytest.raises(UntrustedError, match="larger than"):
        untrusted.read_regular(path, limit=9)


def test_decode_text_points_at_the_bad_line() -> None:
    with pytest.raises(UntrustedError) as caught:
        untrusted.decode_text(b"{\n\n\xc3(}")
    assert caught.value.line == 3 and "0xc3" in caught.value.message


def test_shown_quotes_a_name_that_is_not_one_printable_line() -> None:
    assert untrusted.shown("a/b c.json") == "a/b c.json"
    assert untrusted.shown("a\nb") == "'a\\nb'"
    assert untrusted.shown(b"\xff.json") == "'\\udcff.json'"


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ('{"a": [1, 1' + "0" * 5000 + "]}", ("a", 1), "integer of 5001 digits"),
        ('{"a": 1e999}', ("a",), "too large for a 64-bit float"),
        ('{"\\u0000": {}}', ("\x00",), "NUL"),  # a key whose value is a container
        ('"\\ud800"', (), "lone surrogate"),
        ("18446744073709551616", (), "outside 64 bits"),
    ],
)
def test_refused_anywhere(text: str, where: tuple[object, ...], message: str) -> None:
    with pytest.raises(UntrustedError) as caught:
        untrusted.loads(text)
    assert caught.value.where == where and message in caught.value.message
