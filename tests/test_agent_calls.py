"""Tool calls and final answers in model replies: native, Hermes text, bare JSON, malformed."""

from __future__ import annotations

import json

import pytest

from nvcc_opt.agent.answer import FinalAnswer, find_answer
from nvcc_opt.agent.calls import EXPECTED, parse_calls
from nvcc_opt.agent.model import Reply, ToolCall


def test_native_calls_win_over_text() -> None:
    native = ToolCall("abc", "list_dir", '{"path": "src"}')
    text = '<tool_call>{"name": "search", "arguments": {"pattern": "x"}}</tool_call>'
    assert parse_calls(Reply(text, (native,))) == ([native], [])


def test_hermes_blocks_with_object_or_string_arguments() -> None:
    text = (
        "Let me look.\n"
        '<tool_call>\n{"name": "list_dir", "arguments": {"path": "src"}}\n</tool_call>\n'
        '<tool_call>{"name": "search", "arguments": "{\\"pattern\\": \\"scale\\"}"}</tool_call>'
        '<tool_call>{"name": "list_dir"}</tool_call>'
    )
    calls, problems = parse_calls(Reply(text), id_prefix="t3")
    assert problems == []
    assert calls == [
        ToolCall("t3_1", "list_dir", '{"path": "src"}'),
        ToolCall("t3_2", "search", '{"pattern": "scale"}'),
        ToolCall("t3_3", "list_dir", "{}"),
    ]


def test_bare_json_call_but_not_a_final_answer() -> None:
    text = 'I will search.\n```json\n{"name": "search", "arguments": {"pattern": "a{b"}}\n```'
    calls, problems = parse_calls(Reply(text))
    assert (calls, problems) == ([ToolCall("call_1", "search", '{"pattern": "a{b"}')], [])
    answer = json.dumps({"final_code": "x", "explanation": "y", "name": "n", "arguments": {}})
    assert parse_calls(Reply(answer)) == ([], [])


def test_plain_text_and_code_braces_are_no_calls() -> None:
    text = "__global__ void k() { int i = 0; }\nDone thinking."
    assert parse_calls(Reply(text)) == ([], [])


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (
            '<tool_call>{"name": "list_dir", "arguments": {"path": "src"}</tool_call>',
            "tool call 1 is not valid JSON (Expecting ',' delimiter at line 1 column 50)",
        ),
        ('<tool_call>["list_dir"]</tool_call>', "tool call 1 must be a JSON object, not list"),
        (
            '<tool_call>{"arguments": {}}</tool_call>',
            'tool call 1 needs a "name": the tool name as a string',
        ),
        (
            '<tool_call>{"name": "search", "arguments": 3}</tool_call>',
            'tool call 1 to search needs "arguments" as a JSON object of argument names to values',
        ),
        (
            '<tool_call>{"name": "search", "arguments": {}}',
            "tool call 1 has no closing </tool_call>",
        ),
    ],
)
def test_malformed_calls_say_what_to_fix(text: str, problem: str) -> None:
    assert parse_calls(Reply(text)) == ([], [f"{problem}. {EXPECTED}"])


def test_one_bad_block_does_not_hide_a_good_one() -> None:
    text = (
        '<tool_call>{oops}</tool_call><tool_call>{"name": "list_dir", "arguments": {}}</tool_call>'
    )
    calls, problems = parse_calls(Reply(text), id_prefix="t1")
    assert calls == [ToolCall("t1_1", "list_dir", "{}")]
    assert len(problems) == 1 and problems[0].startswith("tool call 1 is not valid JSON")


def test_answer_in_fence_or_bare() -> None:
    fenced = 'Here it is:\n```json\n{"final_code": "int x;\\n", "explanation": "e"}\n```\n'
    assert find_answer(fenced) == FinalAnswer(final_code="int x;\n", explanation="e")
    bare = '{"final_code": "a", "explanation": "b", "compile_args": ["-O3"]}'
    assert find_answer(bare) == FinalAnswer(final_code="a", explanation="b", compile_args=["-O3"])


def test_no_answer_in_text() -> None:
    assert find_answer("still looking") is None
    assert find_answer('{"name": "search", "arguments": {}}') is None


def test_invalid_answers_say_what_is_wrong() -> None:
    blank = find_answer('{"final_code": "  ", "explanation": "e"}')
    assert isinstance(blank, str) and "'final_code' value error, must not be empty" in blank
    missing = find_answer('{"final_code": "x", "compile_args": "-O3"}')
    assert isinstance(missing, str)
    assert "'explanation' field required" in missing
    assert "'compile_args' input should be a valid list" in missing
    broken = find_answer('{"final_code": "line\none", "explanation": "e"}')
    assert isinstance(broken, str) and broken.startswith("your final answer is not valid JSON")
