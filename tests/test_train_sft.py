"""`nvcc-opt train sft` on a tiny student built in the test (no download) and conversations made
from real agent-loop traces: the loss mask itself, real optimizer steps, the checkpoint answering
through `hf:PATH`, and the one-line refusals."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

pytest.importorskip("trl")
pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends import hf_local  # noqa: E402
from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TEMPLATE  # noqa: E402
from nvcc_opt_train.cli import train  # noqa: E402
from nvcc_opt_train.conversations import conversation, write_dataset  # noqa: E402
from nvcc_opt_train.sft import TRAIN_LOG, SFTSettings, _trainer  # noqa: E402
from nvcc_opt_train.tiny import tiny_student  # noqa: E402
from nvcc_opt_train.turns import Budget, all_examples  # noqa: E402
from tests.test_train_conversations import scripted_traces  # noqa: E402


def rendered(row: dict[str, Any]) -> str:
    from transformers.utils.chat_template_utils import render_jinja_template

    tools = json.loads(row["tools"])
    return str(
        render_jinja_template([row["messages"]], tools=tools, chat_template=HERMES_TOOLS_TEMPLATE)[
            0
        ][0]
    )


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Conversations from scripted traces, their dataset file, and a tiny student for them."""
    folder = tmp_path_factory.mktemp("sft")
    rows = [conversation(p) for p in scripted_traces(folder)]
    dataset = folder / "train.jsonl"
    write_dataset(rows, dataset)
    student = tiny_student(folder / "tiny", [rendered(r) for r in rows])
    return {"rows": rows, "dataset": dataset, "student": student}


def examples(rows: list[dict[str, Any]], tokenizer: Any, budget: Budget | None = None) -> Any:
    """The SFT examples of `rows` (roomy: one per conversation, all of it)."""
    return all_examples(rows, tokenizer, budget or Budget(8192, 512))[0]


def label_runs(labels: list[int]) -> list[tuple[int, int]]:
    """The [start, end) spans of trained tokens: one per assistant turn."""
    runs: list[tuple[int, int]] = []
    for i, label in enumerate(labels):
        if label == -100:
            continue
        if runs and runs[-1][1] == i:
            runs[-1] = (runs[-1][0], i + 1)
        else:
            runs.append((i, i + 1))
    return runs


def sft(*args: str | Path) -> Any:
    """`nvcc-opt train sft` on these hand-made traces: they come from no problem set, so the
    provenance check is overridden (test_train_bad_input.py tests the check itself)."""
    return CliRunner().invoke(train, ["sft", *map(str, args), "--unchecked-source"])


def assistant_outputs(messages: list[dict[str, Any]]) -> str:
    """What the assistant wrote, turn by turn, as the template renders it (no header)."""
    texts = []
    for message in messages:
        if message["role"] != "assistant":
            continue
        calls = "".join(
            '\n<tool_call>\n{"name": "' + c["function"]["name"] + '", "arguments": '
            + c["function"]["arguments"] + "}\n</tool_call>"
            for c in message.get("tool_calls") or []
        )  # fmt: skip
        texts.append(message["content"] + calls + "<|im_end|>")
    return "".join(texts)


def test_labels_are_exactly_the_assistant_turns(made: dict[str, Any], tmp_path: Path) -> None:
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(made["student"])
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        rows = examples(made["rows"], tokenizer)
        trainer = _trainer(rows, made["student"], tokenizer, tmp_path, SFTSettings())
    assert not trainer.args.gradient_checkpointing, "off unless asked for (slow on a CPU)"
    assert not [w for w in caught if "checkpointing" in str(w.message)], "the current name"
    for index, row in enumerate(made["rows"]):
        batch = trainer.data_collator([trainer.train_dataset[index]])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        assert tokenizer.decode(ids) == rendered(row)
        targets = tokenizer.decode(
            [i for i, label in zip(ids, labels, strict=True) if label != -100]
        )
        assert targets == assistant_outputs(row["messages"])
        assert "<tool_response>" not in targets and "<tools>" not in targets
        for message in row["messages"]:
            if message["role"] in ("tool", "system", "user"):
                assert message["content"] not in targets
        if index == 0:  # the tool-call tokens and their arguments are targets
            assert '<tool_call>\n{"name": "list_dir", "arguments": {"path": "src"}}' in targets


@pytest.mark.slow
def test_sft_lowers_the_loss_and_the_checkpoint_answers(
    made: dict[str, Any], tmp_path: Path
) -> None:
    out = tmp_path / "student-sft"
    result = sft(
        made["dataset"], "--student", made["student"], "--out", out,
        "--max-steps", "24", "--lr", "3e-3", "--seed", "1",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    log = json.loads((out / TRAIN_LOG).read_text())
    losses = [step["loss"] for step in log["steps"]]
    assert len(losses) == 24
    assert sum(losses[-3:]) / 3 < 0.8 * sum(losses[:3]) / 3, losses
    assert log["conversations"] == 3
    model = hf_local.from_spec(f"{out}?max_new_tokens=12")
    row = made["rows"][0]
    reply = model.complete(row["messages"][:2], json.loads(row["tools"]))
    assert model.template is None  # the checkpoint's own template renders the tools
    assert reply.prompt_tokens > 100 and 0 < reply.completion_tokens <= 12
    assert "<tools>" in model.render(row["messages"][:2], json.loads(row["tools"]))


@pytest.mark.slow
def test_lora_is_merged_into_a_plain_checkpoint(made: dict[str, Any], tmp_path: Path) -> None:
    pytest.importorskip("peft")
    out = tmp_path / "lora"
    result = sft(
        made["dataset"], "--student", made["student"], "--out", out,
        "--max-steps", "2", "--lora", "--lr", "1e-3",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert not (out / "adapter_config.json").exists()
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(out)
    assert not any("lora" in name for name, _ in model.named_parameters())


def test_bad_input_is_refused_in_one_line(made: dict[str, Any], tmp_path: Path) -> None:
    student, dataset = made["student"], made["dataset"]
    broken = tmp_path / "broken.jsonl"
    broken.write_text(dataset.read_text().splitlines()[0] + '\n{"text": "hi"}\n')
    plain = tmp_path / "plain"
    plain.mkdir()
    for item in student.iterdir():
        (plain / item.name).write_bytes(item.read_bytes())
    (plain / "chat_template.jinja").write_text(
        "{% for m in messages %}{{ '<|im_start|>' + m.role + '\\n' + m.content + '<|im_end|>\\n' }}"
        "{% endfor %}"
    )
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("mine")
    cases = {
        "no such dataset file": (tmp_path / "none.jsonl", student, tmp_path / "o1"),
        f"{broken}:2: not a conversation row": (broken, student, tmp_path / "o2"),
        "no such student folder": (dataset, tmp_path / "nobody", tmp_path / "o3"),
        "does not render tools; convert it first: nvcc-opt train student": (
            dataset, plain, tmp_path / "o4",
        ),
        "exists and is not empty; nothing overwritten": (dataset, student, taken),
    }  # fmt: skip
    for expected, (data, who, out) in cases.items():
        result = sft(data, "--student", who, "--out", out)
        assert result.exit_code == 1, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and expected in lines[0], result.output
    assert [p.name for p in taken.iterdir()] == ["keep.txt"]
    assert not any((tmp_path / f"o{n}").exists() for n in range(1, 5))


def test_a_turn_longer_than_max_length_is_left_out_never_cut(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """trl would cut a long example at its end, which is a reply, the last one the teacher's
    final answer (on an H100, the one trace kept lost all of it: 9,602 tokens, the answer from
    token 8,775, cut at 8,192). A turn longer than --max-length with its prompt is left out with
    a warning, the turns before it still train; when none is left, one line and no OUT."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(made["student"])
    trainer = _trainer(
        examples(made["rows"], tokenizer), made["student"], tokenizer, tmp_path / "t", SFTSettings()
    )
    lengths = sorted(len(ids) for ids in trainer.train_dataset["input_ids"])
    assert lengths == sorted(len(tokenizer(rendered(r))["input_ids"]) for r in made["rows"])

    out = tmp_path / "some"
    limit = str(lengths[-1] - 1)
    result = sft(
        made["dataset"], "--student", made["student"], "--out", out, "--max-steps", "1",
        "--max-length", limit,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert f"1 assistant turns left out: with their prompt they are longer than --max-length " \
        f"{limit} tokens ({lengths[-1]})" in result.output  # fmt: skip
    log = json.loads((out / TRAIN_LOG).read_text())
    sizes = [len(tokenizer(rendered(r))["input_ids"]) for r in made["rows"]]
    turns = [[0] * sum(m["role"] == "assistant" for m in r["messages"]) for r in made["rows"]]
    longest = sizes.index(lengths[-1])
    turns[longest].pop()  # its final answer is left out; its turns before it train
    assert log["turns_left_out_long"][longest] == [lengths[-1]]
    assert log["elided_tool_results"] == turns and turns[longest]
    assert log["examples"] == 3 and log["left_out_longer_than_max_length"] == []

    none = tmp_path / "none"
    result = sft(
        made["dataset"], "--student", made["student"], "--out", none, "--max-length", "40",
    )  # fmt: skip
    assert result.exit_code == 1, result.output
    last = result.output.strip().splitlines()[-1]
    assert last.startswith("Error: ") and "no assistant turn left to train on" in last
    assert "longer than --max-length 40 tokens" in last
    assert not none.exists()


def test_each_turn_trains_on_the_prompt_the_hf_backend_shows_it(
    made: dict[str, Any], tmp_path: Path
) -> None:
    """A teacher's conversation longer than the student's context: its last turn's prompt has
    the oldest tool result elided, as the hf backend elides it at that turn, and its earlier
    turns see that result whole, as the backend shows it to them. Through trl's own
    tokenization: the tokens before each trained turn are the backend's prompt for that turn."""
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(made["student"])
    row = json.loads(json.dumps(made["rows"][0]))
    messages, tools = row["messages"], json.loads(row["tools"])
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    first_result = next(i for i, m in enumerate(messages) if m["role"] == "tool")
    messages[first_result]["content"] = "kernel.cu\n" * 400
    backend = hf_local.from_spec(f"{made['student']}?max_new_tokens=64")
    needed = backend.count(backend.render(messages[: turns[-1]], tools))
    backend.context = needed - 1 + 64  # the last turn's prompt is one token too long
    shown = [backend._within_context(messages[:turn], tools) for turn in turns]
    assert [n for _, n in shown] == [0, 0, 1]

    budget = Budget(backend.context, 64)
    trainer = _trainer(
        examples([row], tokenizer, budget), made["student"], tokenizer, tmp_path / "t",
        SFTSettings(),
    )  # fmt: skip
    seen = []
    for index in range(len(trainer.train_dataset)):
        batch = trainer.data_collator([trainer.train_dataset[index]])
        ids, labels = batch["input_ids"][0].tolist(), batch["labels"][0].tolist()
        seen += [tokenizer.decode(ids[:start]) for start, _ in label_runs(labels)]
    assert seen == [prompt for prompt, _ in shown]

    dataset = tmp_path / "long.jsonl"
    write_dataset([row, *made["rows"][1:]], dataset)
    out = tmp_path / "out"
    result = sft(
        dataset, "--student", made["student"], "--out", out, "--max-steps", "1",
        "--context", str(backend.context), "--reply-tokens", "64",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "1 of 3 conversations outgrow the context" in result.output
    log = json.loads((out / TRAIN_LOG).read_text())
    assert log["elided_tool_results"] == [[0, 0, 1], [0, 0], [0]]
    assert log["examples"] == 4 and log["context"] == backend.context
    assert log["left_out_longer_than_max_length"] == []
