"""SFT examples whose every assistant turn follows the prompt inference would show at that turn.

At inference the in-process backend fits each prompt on its own (`nvcc_opt.agent.context.
fit_prompt`): the conversation so far, with as few of its oldest tool results elided as it takes
for it and the reply's tokens to fit the context. So turn 3 may see every result whole and turn
9 the first two elided. Eliding a whole teacher conversation once would show every turn the
elisions the last one needs (and the final answer a context it never had).

Here each assistant turn's prompt is fitted by that same rule, with the same prompt rendering
(the chat template with the tools, ending with the assistant's header) and the same count (the
student's tokenizer). A causal model's loss on a turn depends only on the tokens before it, so
consecutive turns whose prompts agree share one example: the elisions the later turn's prompt
makes before an earlier turn are exactly those that earlier turn's prompt makes. The example's
prompt is its first turn's prompt; its completion runs to its last turn, with the tool results
between them as that last prompt shows them; trl trains on the assistant turns of the completion
only (prompt-completion rows with `assistant_only_loss`). A conversation that fits whole is one
example holding all of it, as before. A turn whose prompt does not fit even with every older
result elided is where inference stops (the backend refuses the prompt): it and the turns after
it are left out. A turn longer than `max_length` with its prompt (a reply longer than the
backend's reply room) is left out alone; the turns before it keep their own example.

Cost: each turn's prompt is fitted as the backend fits it, from no elision up, rendered and
counted once per count tried; an example is at most one prompt and its turns, so the tokens
trained on grow with the number of distinct prompts, not with the square of the turns.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from nvcc_opt.agent.context import fit_prompt

Messages = list[dict[str, Any]]
# tokens of a prompt (the conversation so far, rendered with the tools and the assistant header)
PromptTokens = Callable[[Messages, Messages], int]


@dataclass(frozen=True)
class Budget:
    """What the backend the student runs under keeps a prompt within: `context` tokens, less
    `reply` kept for what it writes (hf: `?context=N`, else the model's own; `max_new_tokens`);
    and `max_length`, the longest example trained on (None: no limit)."""

    context: int
    reply: int
    max_length: int | None = None


@dataclass
class Turns:
    """One conversation's examples; per assistant turn trained on, how many results its prompt
    elides; `unfit`: the last turns, from the first whose prompt cannot fit (inference stops
    there); `long`: the lengths of the turns left out alone, their prompt and reply longer than
    `max_length` (a reply longer than the backend's `reply` tokens)."""

    examples: list[dict[str, Any]] = field(default_factory=list)
    elided: list[int] = field(default_factory=list)
    unfit: int = 0
    long: list[int] = field(default_factory=list)


def hf_reply_tokens() -> int:
    """The hf backend's default `max_new_tokens`: what it keeps for a reply unless told."""
    from nvcc_opt.agent.backends.hf_local import HFModel

    default = inspect.signature(HFModel.__init__).parameters["max_new_tokens"].default
    return int(default)


def model_context(student: Path) -> int:
    """The context the hf backend gives a checkpoint without `?context=N`: its config's
    `max_position_embeddings`, else 8,192 (`HFModel.context_tokens`)."""
    import transformers  # type: ignore[import-not-found, unused-ignore]

    config = transformers.AutoConfig.from_pretrained(student, local_files_only=True)
    return int(getattr(config, "max_position_embeddings", None) or 8192)


def counters(tokenizer: Any) -> tuple[PromptTokens, PromptTokens]:
    """Tokens of a prompt as the hf backend counts it (`HFModel._within_context`: the chat
    template with the tools and the assistant's header, tokenized without special tokens), and
    of a whole example (the same without the header)."""

    def count(messages: Messages, tools: Messages, header: bool) -> int:
        text = tokenizer.apply_chat_template(
            messages, tools=tools or None, add_generation_prompt=header, tokenize=False
        )
        return len(tokenizer(text, add_special_tokens=False)["input_ids"])

    return (lambda ms, tools: count(ms, tools, True)), (lambda ms, tools: count(ms, tools, False))


def turn_examples(
    row: dict[str, Any], tokens: PromptTokens, budget: Budget, length: PromptTokens | None = None
) -> Turns:
    """The examples of one conversation row (`messages`, `tools`, `meta`): prompt-completion
    rows (`prompt`, `completion`, `tools`, `meta`) in the order of their turns. `tokens` counts
    a prompt; `length` a whole example (needed with `budget.max_length`)."""
    messages: Messages = row["messages"]
    tools: Messages = json.loads(row["tools"])
    out = Turns()
    groups: list[list[tuple[int, Messages, frozenset[int]]]] = []  # (turn, prompt, elided)
    alone = True  # the next turn starts an example of its own
    for turn in (i for i, m in enumerate(messages) if m["role"] == "assistant"):
        prompt, _, ok = fit_prompt(
            messages[:turn], lambda ms: tokens(ms, tools), budget.context, budget.reply
        )
        if not ok:  # inference stops here: the backend refuses a prompt that cannot fit
            out.unfit = sum(1 for m in messages[turn:] if m["role"] == "assistant")
            break
        if budget.max_length is not None and length is not None:
            size = length([*prompt, messages[turn]], tools)
            if size > budget.max_length:
                out.long.append(size)
                alone = True  # never in an example with the turns around it
                continue
        elided = frozenset(i for i, m in enumerate(prompt) if m is not messages[i])
        out.elided.append(len(elided))
        if not alone and all(_agree(elided, e, t) for t, _, e in groups[-1]):
            groups[-1].append((turn, prompt, elided))
        else:
            groups.append([(turn, prompt, elided)])
        alone = False
    for group in groups:
        (first, _, _), (last, prompt, _) = group[0], group[-1]
        shown = [*prompt, messages[last]]
        out.examples.append({
            "prompt": shown[:first],
            "completion": shown[first:],
            "tools": row["tools"],
            "meta": row["meta"],
        })  # fmt: skip
    return out


def _agree(later: frozenset[int], earlier: frozenset[int], before: int) -> bool:
    """Whether a later turn's prompt elides, before index `before` (an earlier turn), exactly
    what that earlier turn's own prompt elides."""
    return {i for i in later if i < before} == earlier


def all_examples(
    rows: list[dict[str, Any]], tokenizer: Any, budget: Budget
) -> tuple[list[dict[str, Any]], list[Turns]]:
    """Every row's examples, in order, and each row's `Turns`, counted with `tokenizer`."""
    tokens, length = counters(tokenizer)
    per_row = [turn_examples(row, tokens, budget, length) for row in rows]
    return [e for t in per_row for e in t.examples], per_row
