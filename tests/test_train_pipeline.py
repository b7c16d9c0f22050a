"""The training pipeline end to end, as a user runs it, on CPU: `nvcc-opt train problems` (the
suite_mini fixture suite, real CMake + nvcc builds) -> `nvcc-opt train collect` (a scripted
teacher on a loopback OpenAI-compatible server, the real optimize with its real verification and
store) -> `nvcc-opt train sft` (a tiny student built here from a config, real optimizer steps) ->
the checkpoint answering through `--model hf:PATH`.

Nothing is faked: suite_mini's tagged regions are host code in .cu files, so their apps build
with nvcc and run on this CPU-only machine; no GPU run step is needed, so none is stood in for.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("trl")
pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends import load  # noqa: E402
from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TEMPLATE  # noqa: E402
from nvcc_opt_train.cli import train  # noqa: E402
from nvcc_opt_train.problemset import ProblemSet  # noqa: E402
from nvcc_opt_train.sft import TRAIN_LOG  # noqa: E402
from nvcc_opt_train.tiny import tiny_student  # noqa: E402
from tests.conftest import needs_nvcc  # noqa: E402
from tests.openai_server import Step, call, completion, scripted_server  # noqa: E402

MINI = Path(__file__).parent / "fixtures" / "suite_mini"
ARCH = "-DCMAKE_CUDA_ARCHITECTURES=90"


def nvcc_opt_train(*args: str | Path) -> Any:
    """`nvcc-opt train ARGS` through the real click group; the result (exit code, output)."""
    return CliRunner().invoke(train, [str(a) for a in args])


def region(app: str, file: str) -> str:
    """The text of the tagged function of a suite_mini source (after its pragma)."""
    return (MINI / app / "src" / file).read_text().split("// @optimize\n", 1)[1]


def answer(code: str, explanation: str) -> str:
    body = json.dumps({"final_code": code, "explanation": explanation})
    return f"Done.\n```json\n{body}\n```"


def rendered(row: dict[str, Any]) -> str:
    """A conversation as the student's template renders it (to train the tiny tokenizer on)."""
    from transformers.utils.chat_template_utils import render_jinja_template

    tools = json.loads(row["tools"])
    text = render_jinja_template(
        [row["messages"]], tools=tools, chat_template=HERMES_TOOLS_TEMPLATE
    )[0][0]
    return str(text)


@needs_nvcc
@pytest.mark.slow
def test_problems_collect_sft_and_the_checkpoint_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NVCC_OPT_CREDIT_UNAVAILABLE", "1")  # no GPU here: credit what it lacks
    # 1. problems: the fixture suite, built for real; every problem in train
    problems = tmp_path / "set"
    made = nvcc_opt_train(
        "problems", problems, "--from", "suite", MINI, "--check", "build", "--split", "train",
        "--cmake-arg", ARCH, "--jobs", "2",
    )  # fmt: skip
    assert made.exit_code == 0, made.output
    assert f"{problems}: complete" in made.output
    assert "check: build only" in made.output
    opened = ProblemSet.open(problems)
    train_problems = opened.problems("train")
    assert sorted(p.benchmark for p in train_problems) == ["alpha", "beta"]
    assert opened.problems("eval") == []
    assert opened.manifest["check"]["level"] == "build"

    # 2. collect: a scripted teacher; the real optimize verifies and stores (or refuses)
    half = region("alpha", "work.cu").replace("++p)", "p += 2)")  # same sum, half the passes
    wrong = region("beta", "scale.cu").replace("w * x[i]", "x[i]")  # faster and wrong
    trying = call("c1", "benchmark_code", json.dumps({"code": half}))
    script = [
        Step(completion("Trying half the passes.", tool_calls=[trying])),
        Step(completion(answer(half, "Half the passes: each computes the same sum."))),
        Step(completion(answer(wrong, "Dropped the weight: 2x faster, I measured it."))),
    ]
    out = tmp_path / "collect"
    with scripted_server(script, lifetime_s=300) as server:
        collected = nvcc_opt_train(
            "collect", problems, "--model", f"openai:scripted@{server.base_url}", "--out", out,
            "--turns", "3", "--time", "120", "--cmake-arg", ARCH,
        )  # fmt: skip
        asked = len(server.requests)
    assert collected.exit_code == 0, collected.output
    assert asked == 3, "the teacher answered every turn of both problems"
    assert "kept (verified proposed, speedup > 1): 1" in collected.output
    assert "dropped, wrong final: 1" in collected.output
    summary = json.loads((out / "collect.json").read_text())
    assert summary["kept"] == 1 and summary["tool_calls_kept"] == {"benchmark_code": 1}
    rows = [json.loads(line) for line in (out / "sft.jsonl").read_text().splitlines()]
    assert len(rows) == 1
    assert "Half the passes" in json.dumps(rows[0]) and "Dropped the weight" not in json.dumps(
        rows[0]
    )
    assert any(m.get("tool_calls") for m in rows[0]["messages"]), "the tool call is a target"

    # 3. sft: a tiny student (a config, a tokenizer trained on these texts), real steps
    student = tiny_student(tmp_path / "tiny", [rendered(row) for row in rows])
    checkpoint = tmp_path / "student-sft"
    trained = nvcc_opt_train(
        "sft", out / "sft.jsonl", "--student", student, "--out", checkpoint,
        "--max-steps", "12", "--lr", "3e-3", "--seed", "1",
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    assert "trained 12 steps" in trained.output
    losses = [step["loss"] for step in json.loads((checkpoint / TRAIN_LOG).read_text())["steps"]]
    assert len(losses) == 12
    assert losses[-1] < losses[0] and sum(losses[-3:]) < 0.85 * sum(losses[:3]), losses

    # 4. the checkpoint answers through --model hf:PATH (nvcc-opt's own backend loader)
    model = load(f"hf:{checkpoint}?max_new_tokens=8")
    tools = json.loads(rows[0]["tools"])
    reply = model.complete(rows[0]["messages"][:2], tools)
    assert model.name == f"hf:{checkpoint}"
    assert reply.prompt_tokens > 50 and 0 < reply.completion_tokens <= 8
    assert reply.raw["chat_template"] == "model", "its own template renders the tools"
