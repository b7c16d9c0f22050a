"""The agent loop against a scripted model and the real file tools, trace checked exactly."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from nvcc_opt.agent.answer import FinalAnswer
from nvcc_opt.agent.calls import EXPECTED
from nvcc_opt.agent.loop import NUDGE, Agent, Limits, Outcome
from nvcc_opt.agent.model import Reply, ToolCall
from nvcc_opt.agent.scripted import Scripted, ScriptedModel
from nvcc_opt.agent.trace import TRACE_FORMAT, TRACE_VERSION, TraceError, TraceWriter, load_trace
from nvcc_opt.toolbox.schema import Toolbox, tool
from nvcc_opt.tools.files import ProjectFiles

FILES = ["file_viewer", "list_dir", "search"]
ANSWER = {"final_code": "__global__ void k() {}\n", "explanation": "faster"}


class Clock:
    """Time stands still unless a test moves it."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class Chores:
    """Tools that spend (fake) time or are interrupted, beside the real file tools."""

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    @tool
    def wait(self, seconds: float) -> str:
        """Spend time.

        Args:
            seconds: How long.
        """
        self.clock.now += seconds
        return "waited"

    @tool
    def interrupt(self) -> str:
        """Act as if the user pressed Ctrl-C."""
        raise KeyboardInterrupt


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    (root / "src").mkdir(parents=True)
    (root / "src" / "kernel.cu").write_text("__global__ void scale(float* x) { x[0] *= 2; }\n")
    (root / "README.md").write_text("Scale a vector.\n")
    return root


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def toolbox(project: Path, clock: Clock) -> Toolbox:
    return Toolbox.from_objects(ProjectFiles(project), Chores(clock))


def run(
    tmp_path: Path,
    toolbox: Toolbox,
    clock: Clock,
    script: list[Scripted],
    limits: Limits | None = None,
    tools: list[str] | None = None,
) -> tuple[Outcome, ScriptedModel, dict[str, Any]]:
    model = ScriptedModel(script)
    writer = TraceWriter(tmp_path / "trace.json", meta={"task": "t1"})
    agent = Agent(model, toolbox, tools or FILES, limits or Limits(), writer, clock=clock)
    outcome = agent.run("You optimize kernels.", "Make scale faster.")
    return outcome, model, json.loads((tmp_path / "trace.json").read_text())


def answer_text(**override: Any) -> str:
    return "Done.\n```json\n" + json.dumps({**ANSWER, **override}) + "\n```"


def native(name: str, args: dict[str, Any], call_id: str = "c1", usage: int = 0) -> Reply:
    return Reply("", (ToolCall(call_id, name, json.dumps(args)),), usage, usage)


def test_native_call_then_answer_exact_trace(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    listing = toolbox.call("list_dir", {"path": "src"})
    script: list[Scripted] = [
        Reply("", (ToolCall("c1", "list_dir", '{"path": "src"}'),), 50, 7, {"id": "r1"}),
        Reply(answer_text(), (), 80, 20),
    ]
    outcome, model, trace = run(tmp_path, toolbox, clock, script)
    answer = FinalAnswer.model_validate(ANSWER)
    assert outcome == Outcome("final_answer", outcome.message, answer, 2, 130, 27, {"list_dir": 0})
    assert outcome.tokens == 157
    assert model.tools_seen[0] == toolbox.schemas(FILES)
    messages = [
        {"role": "system", "content": "You optimize kernels."},
        {"role": "user", "content": "Make scale faster."},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "list_dir", "arguments": '{"path": "src"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": listing},
        {"role": "assistant", "content": answer_text()},
    ]
    assert model.seen == [messages[:2], messages[:4]]
    call = {"id": "c1", "name": "list_dir", "arguments": '{"path": "src"}', "source": "native"}
    assert trace == {
        "format": TRACE_FORMAT,
        "version": TRACE_VERSION,
        "meta": {
            "task": "t1",
            "model": "scripted",
            "tools": FILES,
            "tool_schemas": toolbox.schemas(FILES),
            "limits": {
                "turns": 30,
                "tokens": 200_000,
                "wall_s": 3600.0,
                "tool_s": 3000.0,
                "format_errors": 3,
            },
        },
        "messages": messages,
        "steps": [
            {
                "turn": 1,
                "calls": [{**call, "result": listing, "seconds": 0.0, "error": False}],
                "problems": [],
                "note": None,
                "model_s": 0.0,
                "prompt_tokens": 50,
                "completion_tokens": 7,
                "text": "",
                "raw": {"id": "r1"},
            },
            {
                "turn": 2,
                "calls": [],
                "problems": [],
                "note": None,
                "model_s": 0.0,
                "prompt_tokens": 80,
                "completion_tokens": 20,
                "text": answer_text(),
                "raw": {},
            },
        ],
        "outcome": {
            "reason": "final_answer",
            "message": "the model submitted a valid final answer",
            "answer": {**ANSWER, "compile_args": []},
            "turns": 2,
            "prompt_tokens": 130,
            "completion_tokens": 27,
            "tokens": 157,
            "tool_seconds": {"list_dir": 0.0},
            "wall_s": 0.0,
        },
    }


def test_hermes_text_calls_get_ids_and_real_results(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    text = (
        '<tool_call>{"name": "search", "arguments": {"pattern": "scale"}}</tool_call>\n'
        '<tool_call>{"name": "file_viewer", "arguments": "{\\"path\\": \\"README.md\\"}"}'
        "</tool_call>"
    )
    outcome, model, trace = run(tmp_path, toolbox, clock, [Reply(text), Reply(answer_text())])
    assert outcome.reason == "final_answer"
    assert model.seen[1][2] == {"role": "assistant", "content": text}
    assert model.seen[1][3:] == [
        {
            "role": "tool",
            "tool_call_id": "t1_1",
            "content": toolbox.call("search", '{"pattern": "scale"}'),
        },
        {
            "role": "tool",
            "tool_call_id": "t1_2",
            "content": "[README.md: lines 1-1 of 1]\n    1 | Scale a vector.",
        },
    ]
    assert [c["source"] for c in trace["steps"][0]["calls"]] == ["text", "text"]
    assert outcome.tool_seconds == {"search": 0.0, "file_viewer": 0.0}


def test_bare_json_call(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    bare = Reply('Look first: {"name": "list_dir", "arguments": {}}')
    outcome, model, _ = run(tmp_path, toolbox, clock, [bare, Reply(answer_text())])
    assert outcome.reason == "final_answer"
    assert model.seen[1][3] == {
        "role": "tool",
        "tool_call_id": "t1_1",
        "content": toolbox.call("list_dir", {}),
    }


def test_malformed_call_is_an_observation_and_the_model_recovers(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    bad = Reply('<tool_call>{"name": "list_dir", "arguments": {path: "src"}}</tool_call>')
    good = Reply('<tool_call>{"name": "list_dir", "arguments": {"path": "src"}}</tool_call>')
    script: list[Scripted] = [bad, good, Reply(answer_text())]
    outcome, model, trace = run(tmp_path, toolbox, clock, script)
    assert outcome.reason == "final_answer" and outcome.turns == 3
    problem = (
        "tool call 1 is not valid JSON (Expecting property name enclosed in double quotes "
        f"at line 1 column 36). {EXPECTED}"
    )
    assert model.seen[1][-1] == {"role": "user", "content": problem}
    assert trace["steps"][0]["problems"] == [problem]
    assert trace["steps"][0]["note"] == "format_error"


def test_bad_arguments_and_tools_not_offered_are_error_observations(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    script: list[Scripted] = [
        native("file_viewer", {"path": "README.md", "start": "one"}),
        native("wait", {"seconds": 5}, "c2"),
        Reply(answer_text()),
    ]
    outcome, model, trace = run(tmp_path, toolbox, clock, script)
    assert outcome.reason == "final_answer"
    assert model.seen[1][-1]["content"].startswith("error: argument 'start' must be an integer")
    assert model.seen[2][-1]["content"] == (
        "error: there is no tool named 'wait'. Tools: file_viewer, list_dir, search."
    )
    assert clock.now == 100.0  # the tool that was not offered did not run
    assert [s["calls"][0]["error"] for s in trace["steps"][:2]] == [True, True]


def test_consecutive_format_errors_stop_the_run(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    bad = Reply("<tool_call>{nope}</tool_call>")
    chat = Reply("Thinking about it.")
    script: list[Scripted] = [bad, native("list_dir", {}), bad, chat, chat, bad]
    outcome, model, trace = run(tmp_path, toolbox, clock, script)
    assert (outcome.reason, outcome.turns) == ("format_errors", 6)
    assert outcome.message == "3 replies in a row had no usable tool call"
    assert [s["note"] for s in trace["steps"]] == [
        "format_error",
        None,
        "format_error",
        "nudge",
        "format_error",
        "format_error",
    ]
    nudge = NUDGE
    assert model.seen[4][-1] == {"role": "user", "content": nudge}
    assert trace["messages"][-3] == {"role": "user", "content": NUDGE}  # the 2nd chat: an error
    assert trace["messages"][-1]["content"].startswith("tool call 1 is not valid JSON")


def test_turn_limit(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    script: list[Scripted] = [native("list_dir", {}, f"c{n}") for n in range(5)]
    outcome, model, trace = run(tmp_path, toolbox, clock, script, Limits(turns=2))
    assert (outcome.reason, outcome.message) == ("limit:turns", "reached the limit of 2 turns")
    assert outcome.turns == len(model.seen) == len(trace["steps"]) == 2
    assert trace["outcome"]["reason"] == "limit:turns"


def test_token_limit_counts_reply_usage(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    script: list[Scripted] = [native("list_dir", {}, f"c{n}", usage=30) for n in range(5)]
    outcome, _, _ = run(tmp_path, toolbox, clock, script, Limits(tokens=100))
    assert (outcome.reason, outcome.turns, outcome.tokens) == ("limit:tokens", 2, 120)
    assert outcome.message == "used 120 tokens of 100"


def test_wall_time_limit(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    def slow(messages: list[dict[str, Any]]) -> Reply:
        clock.now += 40
        return native("list_dir", {})

    outcome, _, trace = run(tmp_path, toolbox, clock, [slow] * 5, Limits(wall_s=100))
    assert (outcome.reason, outcome.turns, outcome.wall_s) == ("limit:wall", 3, 120.0)
    assert [s["model_s"] for s in trace["steps"]] == [40.0, 40.0, 40.0]


def test_tool_time_limit(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    script: list[Scripted] = [native("wait", {"seconds": 30}, f"c{n}") for n in range(5)]
    limits = Limits(tool_s=50)
    outcome, _, trace = run(tmp_path, toolbox, clock, script, limits, tools=["wait"])
    assert (outcome.reason, outcome.turns) == ("limit:tool_time", 2)
    assert outcome.tool_seconds == {"wait": 60.0}
    assert trace["steps"][1]["calls"][0]["seconds"] == 30.0


@pytest.mark.parametrize("accepted", [True, False])
def test_invalid_answer_gets_one_repair(
    tmp_path: Path, toolbox: Toolbox, clock: Clock, accepted: bool
) -> None:
    invalid = Reply(answer_text(final_code=""))
    second = Reply(answer_text()) if accepted else invalid
    outcome, model, trace = run(tmp_path, toolbox, clock, [invalid, second])
    repair = model.seen[1][-1]["content"]
    assert repair.startswith(
        "Your final answer could not be used: your final answer is invalid: 'final_code'"
    )
    assert "This is the one repair allowed" in repair
    assert trace["steps"][0]["note"] == "repair"
    if accepted:
        assert outcome.answer == FinalAnswer.model_validate(ANSWER)
    else:
        assert (outcome.reason, outcome.answer) == ("no_answer", None)
        assert outcome.message.startswith("the final answer was invalid again after one repair")


def test_model_error_stops(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    outcome, _, trace = run(tmp_path, toolbox, clock, [native("list_dir", {})])
    assert outcome.reason == "model_error"
    assert outcome.message == "the model failed: the script has only 1 replies"
    assert trace["outcome"]["turns"] == 2


def test_interrupt_in_a_tool_saves_the_trace(
    tmp_path: Path, toolbox: Toolbox, clock: Clock
) -> None:
    script: list[Scripted] = [native("list_dir", {}), native("interrupt", {}, "c2")]
    outcome, _, trace = run(tmp_path, toolbox, clock, script, tools=["list_dir", "interrupt"])
    assert outcome.reason == "interrupted"
    assert trace["outcome"]["reason"] == "interrupted"
    interrupted = trace["steps"][1]["calls"][0]
    assert (interrupted["name"], interrupted["result"]) == ("interrupt", None)
    assert trace["messages"][-1]["role"] == "assistant"


def test_interrupt_in_the_model(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    def ctrl_c(messages: list[dict[str, Any]]) -> Reply:
        raise KeyboardInterrupt

    outcome, _, trace = run(tmp_path, toolbox, clock, [native("list_dir", {}), ctrl_c])
    assert (outcome.reason, outcome.turns) == ("interrupted", 2)
    assert len(trace["steps"]) == 2 and "text" not in trace["steps"][1]


def test_trace_reload_round_trip(tmp_path: Path, toolbox: Toolbox, clock: Clock) -> None:
    _, _, saved = run(tmp_path, toolbox, clock, [native("list_dir", {}), Reply(answer_text())])
    loaded = load_trace(tmp_path / "trace.json")
    assert loaded.to_json() == saved
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "project",
        "trace.json",
    ]  # no temp files left


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        ("not json", "cannot read a trace"),
        ('{"format": "other", "version": 1}', "not an nvcc-opt/trace file"),
        ('{"format": "nvcc-opt/trace", "version": 2}', "trace version 2; this nvcc-opt reads 1"),
    ],
)
def test_load_trace_rejects_other_files(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "t.json"
    path.write_text(content)
    with pytest.raises(TraceError, match=problem):
        load_trace(path)


def test_unknown_tool_name_is_refused_up_front(toolbox: Toolbox, tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown tools"):
        Agent(ScriptedModel([]), toolbox, ["nope"], Limits(), TraceWriter(tmp_path / "t.json"))
