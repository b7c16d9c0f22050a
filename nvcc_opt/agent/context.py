"""A conversation within a model's context: the oldest tool results give way first.

A small model's context (SmolLM2-135M: 8,192 tokens) holds the system prompt with the tool
schemas, the region, and a handful of tool results; a teacher's conversation grows past it (a
search-policy trace on a HeCBench problem counted 9,602 tokens, its final answer starting at
token 8,775). Cutting the end loses the answer, and a model fed a prompt longer than its context
reads garbage. So the content of the oldest tool results is replaced by a note saying so, as few
of them as it takes, oldest first; the system prompt, the user prompt, every assistant turn and
the results of the newest turn's calls stay whole. The model sees the note and may call the tool
again.

One rule for both sides of distillation: the in-process backend applies it to the prompt it is
about to send (`hf_local`, `fit_prompt` through `within_context`), and `train sft` applies the
same `fit_prompt` to each assistant turn's prompt of a teacher's conversation, so a student
learns each turn on the prompt it would be shown at that turn.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from nvcc_opt.agent.model import ModelError

ELIDED = (
    "[this tool result ({chars} characters) was elided to fit the model's context; "
    "call the tool again to see it]"
)


def _note(message: dict[str, Any]) -> str:
    return ELIDED.format(chars=len(str(message.get("content") or "")))


def elidable(messages: list[dict[str, Any]]) -> list[int]:
    """The indexes of the tool results that may give way, oldest first: those before the last
    assistant turn that called tools (that turn's results stay whole, however many calls it
    made), and only those at least twice as long as the note that would replace them (a short
    result is worth keeping)."""
    tools = [i for i, m in enumerate(messages) if m.get("role") == "tool"]
    newest = max((i for i in tools if i > 0 and messages[i - 1].get("role") == "assistant"),
                 default=len(messages))  # fmt: skip
    return [
        i
        for i in tools
        if i < newest and len(str(messages[i].get("content") or "")) > 2 * len(_note(messages[i]))
    ]


def elide(messages: list[dict[str, Any]], count: int) -> list[dict[str, Any]]:
    """`messages` with the content of the `count` oldest elidable tool results replaced by the
    note (new dicts for those; the others are the same objects)."""
    chosen = set(elidable(messages)[:count])
    return [{**m, "content": _note(m)} if i in chosen else m for i, m in enumerate(messages)]


def fit(
    messages: list[dict[str, Any]], fits: Callable[[list[dict[str, Any]]], bool]
) -> tuple[list[dict[str, Any]], int, bool]:
    """The fewest oldest tool results elided so that `fits(messages)`: (messages, how many were
    elided, whether it fits). When even all elidable results elided do not fit, that most elided
    conversation comes back with False, for the caller to refuse. `fits` is asked once per count
    tried, from none up: a note can take more tokens than a result of repeated characters, so
    fitting is not assumed to grow with the count (a conversation holds tens of results).

    >>> msgs = [{"role": "user", "content": "u"}] + [
    ...     {"role": "tool", "content": "x" * 1000} for _ in range(3)]
    >>> short, n, ok = fit(msgs, lambda ms: sum(len(m["content"]) for m in ms) < 2500)
    >>> n, ok, short[1]["content"][:36], short[3] is msgs[3]
    (1, True, '[this tool result (1000 characters) ', True)
    """
    if fits(messages):
        return messages, 0, True
    most = len(elidable(messages))
    for count in range(1, most + 1):
        candidate = elide(messages, count)
        if fits(candidate):
            return candidate, count, True
    return elide(messages, most), most, False


def fit_prompt(
    messages: list[dict[str, Any]],
    tokens: Callable[[list[dict[str, Any]]], int],
    context: int,
    reserved: int,
) -> tuple[list[dict[str, Any]], int, bool]:
    """`fit` for a prompt of `tokens(messages)` tokens that must leave `reserved` of `context`
    for the reply: the rule of the backends that count their own prompts (`within_context`), and
    of `train sft` for each assistant turn of a teacher's conversation."""
    return fit(messages, lambda candidate: tokens(candidate) <= context - reserved)


def within_context(
    messages: list[dict[str, Any]],
    tokens: Callable[[list[dict[str, Any]]], int],
    context: int,
    reserved: int,
    *,
    name: str,
    reserve: str,
) -> tuple[list[dict[str, Any]], int]:
    """`fit_prompt` for a backend: the conversation with the fewest oldest tool results elided
    for `tokens(messages)` and the `reserved` reply tokens to fit `context`, and how many were;
    ModelError (naming the model `name` and its option `reserve`) when even every elidable
    result elided does not fit."""
    fitted, elided, ok = fit_prompt(messages, tokens, context, reserved)
    if not ok:
        raise ModelError(
            f"{name}: the conversation is {tokens(fitted)} tokens with every older tool result "
            f"elided; the context is {context} tokens, {reserved} of them kept for the reply "
            f"({reserve})"
        )
    return fitted, elided
