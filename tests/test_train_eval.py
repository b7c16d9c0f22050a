"""`nvcc-opt train eval`: the metrics on traces the real agent loop wrote (a scripted model),
the table, and runs over the eval split through the fake optimize of test_train_collect (the GPU
run faked at the process edge: no GPU here)."""

from __future__ import annotations

import json
import math
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from nvcc_opt.agent.loop import Agent, Limits
from nvcc_opt.agent.model import Reply, ToolCall
from nvcc_opt.agent.scripted import ScriptedModel
from nvcc_opt.agent.trace import Trace, TraceWriter, load_trace
from nvcc_opt.toolbox.schema import Toolbox, tool
from nvcc_opt_train import runs_cli
from nvcc_opt_train.eval_cli import eval_command
from nvcc_opt_train.evaluate import (
    EVAL_JSON,
    EVAL_MD,
    EvalError,
    Evaluation,
    comparison_notes,
    evaluate,
    read_evaluation,
    render_comparison,
    render_table,
    run_eval,
    turn_counts,
    valid_final,
    with_traces,
)
from nvcc_opt_train.runs import RegionResult, RunRecord
from tests.test_train_collect import (
    CLAIMED,
    VERIFIED,
    fake_options,
    optimize_calls,
    problem_set,
)

ANSWER = json.dumps({"final_code": "int k() { return 2; }", "explanation": "faster"})


class Bench:
    @tool
    def benchmark_code(self, code: str) -> str:
        """Time a candidate.

        Args:
            code: The region's new text.
        """
        return "improved: 1.2x"


def _trace(path: Path, replies: list[Reply]) -> Trace:
    toolbox = Toolbox.from_objects(Bench())
    model = ScriptedModel(replies)
    Agent(model, toolbox, ["benchmark_code"], Limits(), TraceWriter(path)).run("s", "u")
    return load_trace(path)


def mixed(path: Path) -> Trace:
    """Six turns: a native call, a text call, a malformed call, a good and a bad call in one
    reply, no call (nudged), the final answer: two turns are well-formed."""
    call = '<tool_call>{"name": "benchmark_code", "arguments": {"code": "y"}}</tool_call>'
    return _trace(
        path,
        [
            Reply("", (ToolCall("c1", "benchmark_code", '{"code": "x"}'),)),
            Reply(call),
            Reply("<tool_call>{not json}</tool_call>"),
            Reply(call + "<tool_call>{bad}</tool_call>"),
            Reply("Let me think."),
            Reply(ANSWER),
        ],
    )


def silent(path: Path) -> Trace:
    """A model that never calls a tool: nudged, then stopped after three format errors."""
    return _trace(path, [Reply("hello")] * 4)


def _result(**kw: Any) -> RegionResult:
    values: dict[str, Any] = {
        "file": "src/k.cu", "region": "k", "status": "proposed", "speedup": 1.5,
        "rewrite_id": 1, "stopped": "final_answer", "reasons": (), "outcome": "proposed", **kw,
    }  # fmt: skip
    return RegionResult(**values)


def test_turns_and_final_answers_are_read_from_the_loops_trace(tmp_path: Path) -> None:
    good, quiet = mixed(tmp_path / "m.json"), silent(tmp_path / "s.json")
    assert turn_counts(good) == (6, 2)
    assert turn_counts(quiet) == (4, 0) and turn_counts(None) == (0, 0)
    assert valid_final(good, _result(stopped="")), "the trace's outcome decides"
    assert not valid_final(quiet, _result(stopped="final_answer"))
    assert valid_final(None, _result()) and not valid_final(None, _result(stopped="no_answer"))


def test_the_numbers_of_one_model(tmp_path: Path) -> None:
    good, quiet = mixed(tmp_path / "m.json"), silent(tmp_path / "s.json")
    kept = {"status": "original kept", "rewrite_id": None, "speedup": 1.0}
    runs = [
        (_result(speedup=1.5), good),
        (_result(**kept, stopped="format_errors", outcome="no answer"), quiet),
        (_result(speedup=1.03), good),  # verified, but below 5%
        (_result(status="error", rewrite_id=None, stopped="", outcome="error"), None),
        (_result(**kept, outcome="no improvement"), good),  # correct, not faster
        (_result(**kept, outcome="wrong final", explanation="3x faster"), good),
    ]
    e = evaluate(runs, model="m", problems="set", split="eval", problem_runs=6)
    assert (e.runs, e.turns, e.well_formed_turns) == (6, 28, 8)
    assert e.share_well_formed == pytest.approx(8 / 28)
    assert e.final_answers == 4 and e.share_final == pytest.approx(4 / 6)
    assert e.improved == 1 and e.share_improved == pytest.approx(1 / 6)
    assert e.geomean_speedup == pytest.approx(math.prod([1.5, 1.03]) ** (1 / 6))
    assert e.mean_speedup_failures_zero == pytest.approx((1.5 + 0 + 1.03 + 0 + 1.0 + 0) / 6)
    assert e.tool_calls_per_trace == {"benchmark_code": pytest.approx(12 / 5)}
    assert e.traces == 5 and e.held_out
    assert e.outcomes == {"error": 1, "no answer": 1, "no improvement": 1, "proposed": 2,
                          "wrong final": 1}  # fmt: skip


def test_a_proposed_status_without_a_stored_rewrite_is_no_improvement() -> None:
    e = evaluate(
        [(_result(rewrite_id=None, speedup=3.0), None)],
        model="m", problems="s", split="eval", problem_runs=1,
    )  # fmt: skip
    assert e.improved == 0 and e.geomean_speedup == 1.0 and e.mean_speedup_failures_zero == 0.0


def test_the_table_names_both_conventions_and_an_unheld_split(tmp_path: Path) -> None:
    held = evaluate([(_result(), None)], model="teacher", split="eval", problems="s",
                    problem_runs=1)  # fmt: skip
    train = evaluate([(_result(), None)], model="student|x", split="train", problems="s",
                     problem_runs=1)  # fmt: skip
    text = render_table([held, train])
    header, _, first, second = text.splitlines()
    assert "geomean speedup (failure = 1.0, original kept)" in header
    assert "mean speedup (failure = 0, paper Fig. 1)" in header
    assert first.startswith("| teacher | eval | 1 | 0.0% (0/0) | 100.0% (1/1) | 100.0% (1/1) |")
    assert "| student\\|x | train (NOT held out) |" in second


# --- runs over the eval split ----------------------------------------------------------------


def test_eval_runs_the_eval_split_only_and_writes_its_numbers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED}, eval_plans={"e": VERIFIED, "f": CLAIMED})
    options = fake_options(tmp_path, monkeypatch, runs=2)
    evaluation, progress = run_eval(root, options)
    assert {c["app"] for c in optimize_calls(tmp_path)} == {"e", "f"}
    assert progress.remaining == 0 and evaluation.runs == 4 and evaluation.improved == 2
    assert evaluation.geomean_speedup == pytest.approx(1.5 ** (2 / 4))
    assert evaluation.mean_speedup_failures_zero == pytest.approx((1.5 + 1.5) / 4)
    assert evaluation.turns == 8 and evaluation.well_formed_turns == 4
    assert evaluation.final_answers == 4 and evaluation.held_out
    assert evaluation.measured == ["e run 1", "e run 2", "f run 1", "f run 2"]
    assert read_evaluation(options.out) == evaluation
    assert "NOT held out" not in (options.out / EVAL_MD).read_text()


def test_eval_never_falls_back_to_the_train_split(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = problem_set(tmp_path, {"a": VERIFIED})
    out = tmp_path / "out"
    refused = CliRunner().invoke(
        eval_command, ["--model", "search", "--problems", str(root), "--out", str(out)]
    )
    assert refused.exit_code == 1, refused.output
    assert "the eval split has no problems; `--split train`" in refused.output
    assert not out.exists() and optimize_calls(tmp_path) == []

    monkeypatch.setattr(runs_cli, "launcher_path", lambda: fake_options(
        tmp_path, monkeypatch).launcher)  # fmt: skip
    args = ["--model", "search", "--problems", str(root), "--out", str(out), "--split", "train"]
    ran = CliRunner().invoke(eval_command, [*args, "--tools", "benchmark_code,search"])
    assert ran.exit_code == 0, ran.output
    assert "NOT held out" in ran.output and "NOT held out" in (out / EVAL_MD).read_text()
    assert json.loads((out / EVAL_JSON).read_text())["held_out"] is False
    (call,) = optimize_calls(tmp_path)
    assert call["args"][-2:] == ["--tools", "benchmark_code,search"]


def test_compare_prints_one_row_per_model_and_names_a_missing_evaluation(
    tmp_path: Path,
) -> None:
    for name, speedup in (("untrained", 1.0), ("student", 1.2), ("teacher", 1.6)):
        e = evaluate([(_result(speedup=speedup), None)], model=name, problems="s",
                     split="eval", problem_runs=1, measured=["p run 1"])  # fmt: skip
        (tmp_path / name).mkdir()
        (tmp_path / name / EVAL_JSON).write_text(json.dumps(e.to_dict()))
    folders = [str(tmp_path / n) for n in ("untrained", "student", "teacher")]
    shown = CliRunner().invoke(eval_command, ["--compare", *folders])
    assert shown.exit_code == 0, shown.output
    rows = shown.output.splitlines()[2:]
    assert [r.split(" | ")[0] for r in rows] == ["| untrained", "| student", "| teacher"]
    assert "do not measure the same runs" not in shown.output  # the same run, all done
    assert "| 1.600x |" in rows[2]
    missing = CliRunner().invoke(eval_command, ["--compare", folders[0], str(tmp_path / "none")])
    assert missing.exit_code == 1
    assert f"{tmp_path / 'none' / EVAL_JSON}: no evaluation here" in missing.output
    with pytest.raises(EvalError, match="not an evaluation"):
        (tmp_path / "bad").mkdir()
        (tmp_path / "bad" / EVAL_JSON).write_text("[1]")
        read_evaluation(tmp_path / "bad")


def test_a_trace_that_is_not_v1_is_named_and_nothing_is_written(tmp_path: Path) -> None:
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "a-run1.json").write_text(
        json.dumps(
            {
                "format": "nvcc-opt/trace",
                "version": 2,
                "meta": {},
                "messages": [],
                "steps": [],
                "outcome": None,
            }
        )  # fmt: skip
    )
    records = [RunRecord("a", 1, 1, None, 1.0, None, (_result(trace="traces/a-run1.json"),))]
    with pytest.raises(EvalError, match=r"traces/a-run1.json: trace version 2; this nvcc-opt"):
        with_traces(records, tmp_path)


def test_compare_says_when_rows_measured_different_runs(tmp_path: Path) -> None:
    """Two models stopped by --within after different problems, one still running, one from
    another set and one eval.json from before the runs were listed: each named under the table."""

    def row(model: str, measured: list[str], **kw: Any) -> Evaluation:
        runs = [(_result(), None) for _ in measured] or [(_result(), None)]
        values: dict[str, Any] = {"problems": "set", "split": "eval", **kw}
        return evaluate(runs, model=model, problem_runs=len(runs), measured=measured, **values)

    teacher = row("teacher", ["a run 1", "b run 1"])
    student = row("student", ["a run 1", "b run 1", "c run 1", "d run 1", "e run 1", "f run 1"],
                  remaining=2)  # fmt: skip
    other = row("other", ["a run 1", "b run 1"], problems="elsewhere")
    old = replace(row("old", ["a run 1"]), measured=[])
    notes = comparison_notes([teacher, student, other, old])
    assert notes[0] == (
        "the rows come from different problem sets or splits: teacher: set (eval); "
        "student: set (eval); other: elsewhere (eval); old: set (eval)"
    )
    assert "student: 2 runs not done; its numbers cover the others" in notes
    assert any(n.startswith("old: its eval.json does not list its problem runs") for n in notes)
    assert (
        "teacher: 2 of the 6 problem runs of the table; lacks c run 1, d run 1, e run 1, "
        "f run 1" in notes
    )
    assert not any(n.startswith("student: 6 of") for n in notes)
    assert comparison_notes([teacher, row("again", ["b run 1", "a run 1"])]) == []
    text = render_comparison([teacher, student])
    assert text.startswith(render_table([teacher, student]))
    assert "**The rows do not measure the same runs:**\n- student: 2 runs not done" in text


def test_a_stored_speedup_whose_checks_did_not_complete_is_not_credited() -> None:
    partial = "unmeasured: the runtime state check did not run (no channel report)"
    e = evaluate(
        [(_result(speedup=3.0, reasons=("faster: 3x", partial)), None)],
        model="m", problems="s", split="eval", problem_runs=1,
    )  # fmt: skip
    assert e.improved == 0 and e.geomean_speedup == 1.0 and e.mean_speedup_failures_zero == 1.0
