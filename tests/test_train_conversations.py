"""Traces made by the real agent loop (a scripted model, the real file tools) -> SFT rows, the
dataset file, and the training variant of the tool template against the one models see."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import Reply, ToolCall
from nvcc_opt.agent.scripted import Scripted, ScriptedModel
from nvcc_opt.agent.trace import TraceWriter
from nvcc_opt.toolbox.schema import Toolbox
from nvcc_opt.tools.catalog import declarations
from nvcc_opt.tools.files import ProjectFiles

pytest.importorskip("nvcc_opt_train")

from nvcc_opt_train.conversations import (  # noqa: E402
    ConversationError,
    conversation,
    read_dataset,
    write_dataset,
)

TOOLS = ["file_viewer", "list_dir", "search"]
FAST_CODE = "__global__ void scale(float* __restrict__ x) { x[0] *= 2; }\n"
ANSWER = {"final_code": FAST_CODE, "explanation": "restrict lets the loads be cached"}


def answer_text() -> str:
    return "Done.\n```json\n" + json.dumps(ANSWER) + "\n```"


def text_call(name: str, arguments: dict[str, Any]) -> str:
    return f'<tool_call>\n{{"name": "{name}", "arguments": {json.dumps(arguments)}}}\n</tool_call>'


SCRIPTS: dict[str, list[Scripted]] = {
    # a native call, a call written in text, then the answer
    "native_then_text": [
        Reply("", (ToolCall("c1", "list_dir", '{"path": "src"}'),)),
        Reply(text_call("file_viewer", {"path": "src/kernel.cu"})),
        Reply(answer_text()),
    ],
    # two native calls in one turn (their tool results are one user turn), then the answer
    "two_calls": [
        Reply(
            "Looking around.",
            (
                ToolCall("a", "search", '{"pattern": "scale"}'),
                ToolCall("b", "file_viewer", '{"path": "README.md", "start": 1}'),
            ),
        ),
        Reply(answer_text()),
    ],
    # an answer straight away
    "answer_only": [Reply(answer_text())],
}


def make_project(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "src" / "kernel.cu").write_text("__global__ void scale(float* x) { x[0] *= 2; }\n")
    (root / "README.md").write_text("Scale a vector.\n")
    return root


def scripted_traces(folder: Path) -> list[Path]:
    """One trace per script, made by the real loop against the real file tools."""
    project = make_project(folder / "project")
    toolbox = Toolbox.from_objects(ProjectFiles(project))
    traces = []
    for name, script in SCRIPTS.items():
        path = folder / "traces" / f"{name}.json"
        writer = TraceWriter(path, meta={"problem": name})
        agent = Agent(ScriptedModel(script), toolbox, TOOLS, Limits(), writer)
        outcome = agent.run("You optimize CUDA kernels.", "Make scale faster.")
        assert outcome.reason == "final_answer"
        traces.append(path)
    return traces


@pytest.fixture
def traces(tmp_path: Path) -> list[Path]:
    return scripted_traces(tmp_path)


def test_row_holds_the_messages_as_the_model_saw_them(traces: list[Path]) -> None:
    path = traces[0]
    trace = json.loads(path.read_text())
    row = conversation(path)
    assert set(row) == {"messages", "tools", "meta"}
    messages = row["messages"]
    assert [m["role"] for m in messages] == [
        "system", "user", "assistant", "tool", "assistant", "tool", "assistant",
    ]  # fmt: skip
    assert messages[2]["tool_calls"] == [
        {
            "id": "c1",
            "type": "function",
            "function": {"name": "list_dir", "arguments": '{"path": "src"}'},
        }
    ]
    assert messages[3] == {
        "role": "tool",
        "tool_call_id": "c1",
        "content": trace["messages"][3]["content"],
    }
    assert "kernel.cu" in messages[3]["content"]
    assert messages[4] == {
        "role": "assistant",
        "content": text_call("file_viewer", {"path": "src/kernel.cu"}),
    }
    assert messages[-1] == {"role": "assistant", "content": answer_text()}
    for ours, theirs in zip(messages, trace["messages"], strict=True):
        assert ours["content"] == theirs["content"]
    assert json.loads(row["tools"]) == declarations().schemas(TOOLS)
    meta = json.loads(row["meta"])
    assert meta["trace"] == str(path)
    assert meta["problem"] == "native_then_text"
    assert meta["tools"] == TOOLS
    assert meta["outcome"]["reason"] == "final_answer"


def test_schemas_carried_in_meta_win(tmp_path: Path, traces: list[Path]) -> None:
    data = json.loads(traces[1].read_text())
    carried = [{"type": "function", "function": {"name": "custom", "parameters": {}}}]
    data["meta"]["tool_schemas"] = carried
    path = tmp_path / "carried.json"
    path.write_text(json.dumps(data))
    assert json.loads(conversation(path)["tools"]) == carried


def test_dataset_round_trip_and_datasets_reads_it(tmp_path: Path, traces: list[Path]) -> None:
    datasets = pytest.importorskip("datasets")
    rows = [conversation(p) for p in traces]
    out = tmp_path / "sft" / "train.jsonl"
    assert write_dataset(rows, out) == 3
    assert read_dataset(out) == rows
    loaded = datasets.load_dataset(
        "json", data_files=str(out), split="train", cache_dir=str(tmp_path / "cache")
    )
    assert loaded.num_rows == 3
    two = loaded[1]["messages"][2]["tool_calls"]
    # arguments stay each call's own JSON text: no merged fields of other tools
    assert [c["function"]["arguments"] for c in two] == [
        '{"pattern": "scale"}',
        '{"path": "README.md", "start": 1}',
    ]


def test_training_template_renders_what_models_see(traces: list[Path]) -> None:
    pytest.importorskip("transformers")
    from transformers.utils.chat_template_utils import render_jinja_template

    from nvcc_opt.agent.backends.templates import (
        HERMES_TOOLS_TEMPLATE,
        HERMES_TOOLS_TRAINING_TEMPLATE,
    )

    for path in traces:
        row = conversation(path)
        tools = json.loads(row["tools"])
        for end in range(2, len(row["messages"]) + 1):
            for prompt in (True, False):
                texts = [
                    render_jinja_template(
                        [row["messages"][:end]],
                        tools=tools,
                        chat_template=template,
                        add_generation_prompt=prompt,
                    )[0][0]
                    for template in (HERMES_TOOLS_TEMPLATE, HERMES_TOOLS_TRAINING_TEMPLATE)
                ]
                assert texts[0] == texts[1]
        assert "<tools>" in texts[0]
        has_results = any(m["role"] == "tool" for m in row["messages"])
        assert ("<tool_response>" in texts[0]) == has_results


def test_trace_that_is_not_v1_is_refused_naming_the_file(
    tmp_path: Path, traces: list[Path]
) -> None:
    data = json.loads(traces[0].read_text())
    cases: dict[str, Any] = {
        "v2.json": {**data, "version": 2},
        "other.json": {"format": "something", "messages": []},
        "no_messages.json": {k: v for k, v in data.items() if k != "messages"},
        "bad_role.json": {**data, "messages": [{"role": "robot", "content": "x"}]},
        "no_assistant.json": {**data, "messages": data["messages"][:2]},
        "unknown_tool.json": {
            **data,
            "meta": {k: v for k, v in data["meta"].items() if k != "tool_schemas"}
            | {"tools": ["teleport"]},
        },
    }
    for name, broken in cases.items():
        path = tmp_path / name
        path.write_text(json.dumps(broken))
        with pytest.raises(ConversationError) as caught:
            conversation(path)
        message = str(caught.value)
        assert message.startswith(f"{path}: ") and "\n" not in message, message
    (tmp_path / "cut.json").write_text(traces[0].read_text()[:100])
    with pytest.raises(ConversationError, match=r"cut\.json: cannot read a trace"):
        conversation(tmp_path / "cut.json")


def test_bad_dataset_is_refused_naming_file_and_line(tmp_path: Path, traces: list[Path]) -> None:
    good = json.dumps(conversation(traces[0]))
    row = json.loads(good)
    row["messages"][2]["tool_calls"][0]["function"]["arguments"] = {"path": "src"}
    bad_lines = {
        "not JSON": "{",
        "not a conversation row": json.dumps({"text": "hello"}),
        "tool arguments not JSON text": json.dumps(row),
        "no assistant turn": json.dumps({**row, "messages": row["messages"][:2]}),
    }
    for problem, line in bad_lines.items():
        path = tmp_path / "data.jsonl"
        path.write_text(good + "\n" + line + "\n")
        with pytest.raises(ConversationError, match=rf"^{path}:2: .*{problem}"):
            read_dataset(path)
    (tmp_path / "empty.jsonl").write_text("\n")
    with pytest.raises(ConversationError, match="no conversations"):
        read_dataset(tmp_path / "empty.jsonl")
