"""`train grpo` keeps a rollout within the prompts inference sends whole.

At inference the hf backend elides the oldest tool results of a prompt that, with the reply's
tokens, outgrows the context (`agent/context.py`). trl scores a rollout as one token sequence,
so a rollout cannot do that; it ends at the first prompt inference would elide, and each turn
writes at most the backend's reply tokens. A real GRPO step with a tiny model, scripted replies
at the model edge (an untrained model calls no tool) and a problem whose tools answer with a
long error: the rule is checked against the hf backend's own `_within_context`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("trl")
pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends import hf_local  # noqa: E402
from nvcc_opt.agent.model import ModelError  # noqa: E402

CALL = '<tool_call>\n{"name": "benchmark_code", "arguments": {"code": "x"}}\n</tool_call>'
ANSWER = json.dumps({"final_code": "x", "explanation": "done"})
WHY = "the build failed: " + " ".join(f"line {i}: error in kernel.cu" for i in range(60))


def _trainer(tmp: Path) -> Any:
    from nvcc_opt_train.grpo_data import rows
    from nvcc_opt_train.grpo_env import Prepared, Rollouts, environment_class
    from nvcc_opt_train.grpo_run import GRPOSettings, _tokenizer
    from nvcc_opt_train.grpo_run import _trainer as make
    from nvcc_opt_train.tiny import tiny_student
    from nvcc_opt_train.toolpool import open_executor

    problem = Prepared("p", "src/a.cu:k", tmp / "p", error=WHY)
    shared = Rollouts({"p": problem}, open_executor("serial"), "nvcc-opt")
    data = rows([problem], 1, 0, "NVIDIA H200", {})
    envs = {r["environment"]: environment_class(tuple(r["environment"].split("+")), shared)
            for r in data}  # fmt: skip
    model = tiny_student(tmp / "tiny", [CALL, ANSWER, WHY, data[0]["prompt"][0]["content"]])
    settings = GRPOSettings(
        generations=2, batch=2, max_steps=1, samples=1, save_steps=1, max_tool_turns=4,
        pool="serial", gpu_name="NVIDIA H200",
    )  # fmt: skip
    tokenizer = _tokenizer(model)
    print_ = {"model": str(model), "sha256": ""}
    return make(model, tokenizer, tmp / "out", settings, data, envs, shared, {}, print_), model


@pytest.mark.slow
def test_a_rollout_ends_where_inference_would_elide(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    trainer, model = _trainer(tmp_path)
    # the hf backend's budget: the model's context less its default max_new_tokens
    reply = hf_local.HFModel("m").max_new_tokens
    assert trainer.prompt_room == 8192 - reply
    assert trainer.generation_config.max_new_tokens == reply  # a turn's reply, as at inference
    assert trainer.args.max_completion_length == 8192  # trl's own limit: never the first

    tokenizer = trainer.processing_class
    turns: list[int] = []  # per generation call, how many tool results its prompt held

    def generate(prompt_ids: list[list[int]], *_: Any, **__: Any) -> tuple[list[list[int]], None]:
        seen = [tokenizer.decode(ids).count("<tool_response>") for ids in prompt_ids]
        turns.extend(seen)
        texts = [CALL if n < 3 else ANSWER for n in seen]  # calls until three results, then
        return [
            tokenizer(t + "<|im_end|>", add_special_tokens=False)["input_ids"] for t in texts
        ], None

    counted: list[tuple[list[dict[str, Any]], list[Any], int]] = []
    count = trainer.prompt_tokens

    def recorded(messages: list[dict[str, Any]], tools: list[Any]) -> int:
        tokens = count(messages, tools)
        if not counted:  # a context where one round of results fits and a second does not
            trainer.prompt_room = tokens + 10
        counted.append((list(messages), tools, tokens))
        return tokens

    trainer.scripted, trainer.prompt_tokens = generate, recorded
    trainer.train()

    room = trainer.prompt_room
    assert turns == [0, 0, 1, 1]  # each rollout: its first turn, one round of results, no third
    assert [n for _, _, n in counted][:1] == [room - 10] and all(
        n > room for _, _, n in counted[2:]
    )
    step = json.loads((tmp_path / "out" / "grpo_steps.jsonl").read_text().splitlines()[0])
    assert step["context_full"] == 2
    assert [d["context_full"] for d in step["rollout_details"]] == [True, True]
    assert [d["r_perf"] for d in step["rollout_details"]] == [-2.0, -2.0]  # no final answer
    assert all("context full: the next prompt is" in n for n in step["notes"])

    # the hf backend, given the same context, sends the first prompts whole and not the next
    from transformers.utils import get_json_schema

    backend = hf_local.from_spec(f"{model}?context={room + reply}")
    for messages, tools, tokens in counted:
        schemas = [get_json_schema(t) for t in tools]
        assert backend.count(backend.render(messages, schemas)) == tokens
        try:
            whole = backend._within_context(messages, schemas)[1] == 0
        except ModelError:  # not even with the older results elided: inference stops there
            whole = False
        assert whole == (tokens <= room)


def test_a_reply_with_no_room_for_a_prompt_is_refused(tmp_path: Path) -> None:
    from nvcc_opt_train.grpo_data import GRPOError
    from nvcc_opt_train.grpo_run import GRPOSettings, inference_context

    settings = GRPOSettings(context=1024, reply_tokens=1024)
    with pytest.raises(GRPOError, match="reply_tokens = 1024 leaves no room for a prompt"):
        inference_context(tmp_path, settings)
    assert inference_context(tmp_path, GRPOSettings(context=1024, reply_tokens=100)) == (1024, 100)
