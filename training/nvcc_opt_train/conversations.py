"""Teacher traces -> SFT rows: the conversation exactly as the model saw it, and its tools.

One row per trace (format v1, `nvcc_opt.agent.trace`):

    {"messages": [{"role": "system", "content": ...}, {"role": "user", ...},
                  {"role": "assistant", "content": ..., "tool_calls": [{"id", "type",
                   "function": {"name", "arguments": "<JSON text>"}}]},
                  {"role": "tool", "tool_call_id": ..., "content": ...}, ...],
     "tools": "<JSON text: the OpenAI function schemas the model was offered>",
     "meta": "<JSON text: the trace's file, meta and outcome>"}

Tool arguments and the tools stay JSON text: `datasets` infers one struct type per column and
would otherwise merge the argument fields of different tools (a call rendering `"code": null`).
trl's SFTTrainer parses a `tools` string itself. A dataset file is JSON lines, which
`datasets.load_dataset("json", data_files=...)` reads as it is.
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from nvcc_opt.agent.trace import TRACE_FORMAT, TRACE_VERSION, TraceError, load_trace

ROLES = frozenset({"system", "user", "assistant", "tool"})
COLUMNS = ("messages", "tools", "meta")


class ConversationError(ValueError):
    """A trace or dataset that cannot become (or is not) SFT conversations; one line, naming the
    file (and the line of a dataset)."""


def conversation(trace_path: Path) -> dict[str, Any]:
    """The SFT row of one trace. Messages after the last assistant turn are left out: the model
    never saw them, and they would train nothing."""
    try:
        trace = load_trace(trace_path)
    except TraceError as err:
        raise ConversationError(str(err)) from err
    except (KeyError, TypeError) as err:
        raise ConversationError(f"{trace_path}: a trace without {err}") from err
    if not isinstance(trace.messages, list) or not isinstance(trace.meta, dict):
        raise ConversationError(f"{trace_path}: its messages are not a list or meta not an object")
    messages = [_message(trace_path, i, m) for i, m in enumerate(trace.messages)]
    last = max((i for i, m in enumerate(messages) if m["role"] == "assistant"), default=-1)
    if last < 0:
        raise ConversationError(f"{trace_path}: no assistant turn, nothing to learn from")
    meta = {"trace": str(trace_path), **trace.meta, "outcome": trace.outcome}
    return {
        "messages": messages[: last + 1],
        "tools": json.dumps(tool_schemas(trace_path, trace.meta)),
        "meta": json.dumps(meta, default=str),
    }


def tool_schemas(trace_path: Path, meta: dict[str, Any]) -> list[dict[str, Any]]:
    """The schemas the model was offered: `meta["tool_schemas"]` when the trace carries them,
    else rebuilt from the tool catalog's declarations by the names in `meta["tools"]` (the loop
    records only the names; the schemas come from the declarations either way)."""
    carried = meta.get("tool_schemas")
    if isinstance(carried, list):
        return carried
    names = meta.get("tools")
    if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
        raise ConversationError(f"{trace_path}: meta has no list of tool names ('tools')")
    from nvcc_opt.tools.catalog import declarations

    declared = declarations()
    unknown = [n for n in names if n not in declared.tools]
    if unknown:
        raise ConversationError(
            f"{trace_path}: tools {', '.join(unknown)} are not in nvcc-opt's catalog and the "
            "trace carries no schemas for them (meta 'tool_schemas')"
        )
    return declared.schemas(names)


def _message(trace_path: Path, index: int, message: Any) -> dict[str, Any]:
    where = f"{trace_path}: message {index}"
    if not isinstance(message, dict) or message.get("role") not in ROLES:
        raise ConversationError(f"{where} is not a chat message with a role of {sorted(ROLES)}")
    content = message.get("content")
    if content is not None and not isinstance(content, str):
        raise ConversationError(f"{where}: content is not text")
    out: dict[str, Any] = {"role": message["role"], "content": content or ""}
    if message["role"] == "assistant" and message.get("tool_calls"):
        out["tool_calls"] = [_call(where, call) for call in message["tool_calls"]]
    if message["role"] == "tool":
        out["tool_call_id"] = str(message.get("tool_call_id", ""))
    return out


def _call(where: str, call: Any) -> dict[str, Any]:
    function = call.get("function") if isinstance(call, dict) else None
    if not isinstance(function, dict) or not isinstance(function.get("name"), str):
        raise ConversationError(f"{where}: a tool call without a function name")
    arguments = function.get("arguments", "{}")
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    return {
        "id": str(call.get("id", "")),
        "type": "function",
        "function": {"name": function["name"], "arguments": arguments},
    }


def write_dataset(rows: Iterable[dict[str, Any]], path: Path) -> int:
    """Write rows as JSON lines, replacing `path` atomically; the number of rows written."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.")
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps({k: row[k] for k in COLUMNS}) + "\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
    return count


def read_dataset(path: Path) -> list[dict[str, Any]]:
    """The rows of a conversation dataset; ConversationError naming the file and line of the
    first row that is not one."""
    if path.is_dir():
        hint = f" (its dataset: {path / 'sft.jsonl'})" if (path / "sft.jsonl").is_file() else ""
        raise ConversationError(f"{path}: a folder, not a conversation dataset file{hint}")
    if not path.is_file():
        raise ConversationError(f"{path}: no such dataset file")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise ConversationError(f"{path}: cannot read a conversation dataset: {err}") from err
    _refuse_a_trace(path, text)
    lines = text.splitlines()
    rows = [_row(path, number, line) for number, line in enumerate(lines, 1) if line.strip()]
    if not rows:
        raise ConversationError(f"{path}: no conversations in it")
    return rows


def _refuse_a_trace(path: Path, text: str) -> None:
    """A trace given where its conversations belong: say so (and when its version is not one
    this nvcc-opt reads), rather than call its first line a malformed row."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return
    if not isinstance(data, dict) or data.get("format") != TRACE_FORMAT:
        return
    version = data.get("version")
    if version != TRACE_VERSION:
        raise ConversationError(
            f"{path}: an {TRACE_FORMAT} file of version {version!r}, which this nvcc-opt does "
            f"not read (it reads {TRACE_VERSION}); and sft takes a conversation dataset, which "
            "nvcc-opt train collect writes (OUT/sft.jsonl)"
        )
    raise ConversationError(
        f"{path}: a trace, not a conversation dataset; nvcc-opt train collect turns the traces "
        "it keeps into one (OUT/sft.jsonl)"
    )


def _row(path: Path, number: int, line: str) -> dict[str, Any]:
    where = f"{path}:{number}"
    try:
        row = json.loads(line)
    except json.JSONDecodeError as err:
        raise ConversationError(f"{where}: not JSON: {err}") from err
    if not isinstance(row, dict) or set(row) != set(COLUMNS):
        raise ConversationError(f"{where}: not a conversation row ({', '.join(COLUMNS)})")
    if not isinstance(row["tools"], str) or not isinstance(row["meta"], str):
        raise ConversationError(f"{where}: 'tools' and 'meta' must be JSON text")
    messages = row["messages"]
    if not isinstance(messages, list) or not messages:
        raise ConversationError(f"{where}: 'messages' is not a list of chat messages")
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in ROLES:
            raise ConversationError(f"{where}: message {index} has no role of {sorted(ROLES)}")
        for call in message.get("tool_calls") or []:
            arguments = call.get("function", {}).get("arguments") if isinstance(call, dict) else 0
            if not isinstance(arguments, str):
                raise ConversationError(f"{where}: message {index}: tool arguments not JSON text")
    if not any(m["role"] == "assistant" for m in messages):
        raise ConversationError(f"{where}: no assistant turn")
    return row
