"""Tool calls in a reply: native fields, else Hermes `<tool_call>` blocks, else bare JSON."""

from __future__ import annotations

import json
import re
from typing import Any

from nvcc_opt.agent.answer import json_objects
from nvcc_opt.agent.model import Reply, ToolCall

EXPECTED = (
    'Write each tool call as <tool_call>{"name": "<tool name>", "arguments": '
    '{"<argument>": <value>, ...}}</tool_call>'
)
_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)


def parse_calls(reply: Reply, id_prefix: str = "call") -> tuple[list[ToolCall], list[str]]:
    """The reply's tool calls and, for each malformed one, a problem that says what to fix.

    Calls found in text get ids `{id_prefix}_{n}`; native calls keep the ids the model gave.
    """
    if reply.tool_calls:
        return list(reply.tool_calls), []
    calls: list[ToolCall] = []
    problems: list[str] = []
    blocks = list(_BLOCK.finditer(reply.text))
    for number, block in enumerate(blocks, 1):
        if not block.group(0).endswith("</tool_call>"):
            problems.append(f"tool call {number} has no closing </tool_call>. {EXPECTED}")
            continue
        found = _call(block[1], f"{id_prefix}_{len(calls) + 1}")
        if isinstance(found, str):
            problems.append(f"tool call {number} {found}. {EXPECTED}")
        else:
            calls.append(found)
    if blocks:
        return calls, problems
    for obj in json_objects(reply.text):
        if "name" in obj and "arguments" in obj and "final_code" not in obj:
            found = _from_object(obj, f"{id_prefix}_{len(calls) + 1}")
            if isinstance(found, str):
                problems.append(f"a tool call {found}. {EXPECTED}")
            else:
                calls.append(found)
    return calls, problems


def _call(body: str, call_id: str) -> ToolCall | str:
    try:
        obj = json.loads(body)
    except json.JSONDecodeError as exc:
        return f"is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    if not isinstance(obj, dict):
        return "must be a JSON object, not " + type(obj).__name__
    return _from_object(obj, call_id)


def _from_object(obj: dict[str, Any], call_id: str) -> ToolCall | str:
    name = obj.get("name")
    if not isinstance(name, str) or not name:
        return 'needs a "name": the tool name as a string'
    arguments = obj.get("arguments", {})
    if isinstance(arguments, str):  # some models send the arguments JSON-encoded, as OpenAI does
        return ToolCall(call_id, name, arguments)
    if not isinstance(arguments, dict):
        return f'to {name} needs "arguments" as a JSON object of argument names to values'
    return ToolCall(call_id, name, json.dumps(arguments))
