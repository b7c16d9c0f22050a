"""agent/context.py: which tool results give way when a conversation outgrows a context."""

from __future__ import annotations

import doctest
from types import SimpleNamespace
from typing import Any

import pytest

from nvcc_opt.agent import context
from nvcc_opt.agent.backends.vllm_local import VLLMModel
from nvcc_opt.agent.context import elidable, fit
from nvcc_opt.agent.model import ModelError


def conversation(*results: int) -> list[dict[str, Any]]:
    """system, user, then per result an assistant call and a tool result of that many chars."""
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "s" * 3000},
        {"role": "user", "content": "u" * 3000},
    ]
    for n, size in enumerate(results):
        messages.append({"role": "assistant", "content": f"call {n} " + "a" * 500})
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": str(n) * size})
    messages.append({"role": "assistant", "content": "final " + "f" * 2000})
    return messages


def chars(messages: list[dict[str, Any]]) -> int:
    return sum(len(m["content"]) for m in messages)


def test_what_fits_comes_back_unchanged() -> None:
    messages = conversation(2000, 2000)
    fitted, count, ok = fit(messages, lambda ms: True)
    assert (fitted, count, ok) == (messages, 0, True) and fitted is messages


def test_the_fewest_oldest_results_give_way_and_nothing_else() -> None:
    messages = conversation(2000, 3000, 4000, 5000)
    budget = chars(messages) - 4000  # two old results must go: 2000 + 3000 > 4000 > 2000
    fitted, count, ok = fit(messages, lambda ms, b=budget: chars(ms) <= b)
    assert (count, ok) == (2, True)
    changed = [i for i, (a, b) in enumerate(zip(messages, fitted, strict=True)) if a != b]
    assert changed == [3, 5]  # the two oldest tool results
    assert fitted[3]["content"].startswith("[this tool result (2000 characters) was elided")
    assert fitted[3]["tool_call_id"] == "c0" and fitted[3]["role"] == "tool"
    assert fitted[-1] is messages[-1]  # the final answer, whole
    assert fitted[-2] is messages[-2]  # the newest result, whole


def test_the_count_is_the_least_that_fits_for_every_budget() -> None:
    messages = conversation(1000, 2000, 3000, 4000, 5000, 6000)
    total = chars(messages)
    for budget in range(total - 16000, total + 1, 500):
        fitted, count, ok = fit(messages, lambda ms, b=budget: chars(ms) <= b)
        linear = next(
            (k for k in range(len(elidable(messages)) + 1)
             if chars(context.elide(messages, k)) <= budget),
            None,
        )  # fmt: skip
        assert ok == (linear is not None)
        if ok:
            assert count == linear and chars(fitted) <= budget


def test_the_newest_result_and_short_results_never_give_way() -> None:
    messages = conversation(20, 5000)  # a short old result, and a long newest one
    assert elidable(messages) == []
    fitted, count, ok = fit(messages, lambda ms: chars(ms) < 100)
    assert (count, ok) == (0, False) and fitted == messages


def test_when_nothing_fits_the_most_elided_comes_back_refused() -> None:
    messages = conversation(4000, 4000, 100)
    fitted, count, ok = fit(messages, lambda ms: chars(ms) < 1000)
    assert (count, ok) == (2, False)
    assert all(m["content"].startswith("[this tool result") for m in (fitted[3], fitted[5]))


def test_the_doctests() -> None:
    assert doctest.testmod(context).failed == 0


def test_every_result_of_the_newest_turn_stays_whole() -> None:
    messages = conversation(4000, 4000)
    messages.insert(6, {"role": "tool", "tool_call_id": "c1b", "content": "z" * 4000})
    assert [m["role"] for m in messages[4:7]] == ["assistant", "tool", "tool"]
    assert elidable(messages) == [3]  # the newest turn made two calls: both results stay


def test_a_result_cheaper_than_its_note_does_not_stop_the_search() -> None:
    """In tokens a note can cost more than a result of repeated characters (SmolLM2: 1,000 `=`
    are 6 tokens, the note 28): fitting need not grow with the count."""
    messages = conversation(1000, 1000, 1000, 10)
    messages[3]["content"] = "=" * 1000

    def tokens(ms: list[dict[str, Any]]) -> int:
        return sum(6 if m["content"] == "=" * 1000 else 28 if "elided" in m["content"]
                   else len(m["content"]) // 4 for m in ms)  # fmt: skip

    whole = tokens(messages)
    fitted, count, ok = fit(messages, lambda ms: tokens(ms) <= whole - 200)
    assert ok and count == 2 and tokens(fitted) <= whole - 200


class _Tokenizer:
    """A word-per-token tokenizer with the chat template call vLLM's tokenizer answers."""

    def apply_chat_template(self, messages: list[dict[str, Any]], **_: Any) -> list[int]:
        return [0] * sum(len(str(m.get("content") or "").split()) + 4 for m in messages)


class _Engine:
    """Stands in for `vllm.LLM` (vLLM does not run on this machine): its context, tokenizer and
    `chat`, which records the conversation it was given."""

    def __init__(self, max_model_len: int) -> None:
        self.llm_engine = SimpleNamespace(model_config=SimpleNamespace(max_model_len=max_model_len))
        self.seen: list[dict[str, Any]] = []

    def get_tokenizer(self) -> _Tokenizer:
        return _Tokenizer()

    def chat(self, messages: list[dict[str, Any]], *_: Any, **__: Any) -> list[Any]:
        self.seen = messages
        output = SimpleNamespace(text="done", token_ids=[1], finish_reason="stop")
        return [SimpleNamespace(outputs=[output], prompt_token_ids=[0])]


def _vllm(max_model_len: int) -> tuple[VLLMModel, _Engine]:
    model = VLLMModel("/models/m", max_tokens=100)
    engine = _Engine(max_model_len)
    model._llm, model._params = engine, object()
    return model, engine


def test_the_vllm_backend_elides_the_oldest_results_to_fit_its_engine() -> None:
    words = [{"role": "user", "content": "optimize"}] + [
        m
        for n in range(3)
        for m in (
            {"role": "assistant", "content": "", "tool_calls": [{"id": str(n)}]},
            {"role": "tool", "content": " ".join(["w"] * 300)},
        )
    ]
    model, engine = _vllm(max_model_len=100 + 5 + 4 + 3 * 4 + 2 * 300 + 60 + 50)
    reply = model.complete(words, [])
    assert reply.raw["elided_tool_results"] == 1
    assert engine.seen[2]["content"].startswith("[this tool result")
    assert engine.seen[4] is words[4] and engine.seen[6] is words[6]
    roomy, engine = _vllm(max_model_len=10_000)
    assert roomy.complete(words, []).raw["elided_tool_results"] == 0 and engine.seen is words


def test_the_vllm_backend_refuses_what_cannot_fit_in_one_line() -> None:
    model, _ = _vllm(max_model_len=120)
    big = [{"role": "user", "content": " ".join(["w"] * 500)}]
    with pytest.raises(ModelError, match=r"context is 120 tokens, 100 of them kept for the reply"):
        model.complete(big, [])
