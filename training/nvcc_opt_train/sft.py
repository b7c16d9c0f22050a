"""Distillation: trl's SFTTrainer on tool-using conversations, loss on the assistant's turns only.

The student's chat template marks each assistant turn's output (its text, its <tool_call> blocks
with their arguments, its closing <|im_end|>) with `{% generation %}`; with
`assistant_only_loss=True` trl turns everything else (the system prompt with the tools, the user
turns, the tool results) into label -100. So the student learns to call tools as the teacher did
and never learns to write tool results. LoRA is optional and merged before saving, so the
checkpoint in OUT loads as a plain model: `nvcc-opt optimize --model hf:OUT`.

Each assistant turn trains on the prompt the backend would show it at that turn (`turns`: one
example per run of turns whose prompts agree, each prompt with its oldest tool results elided
exactly as `nvcc_opt.agent.context` elides the hf backend's prompts); examples are trl
prompt-completion rows, so the loss covers the assistant turns of the completion only.

Conversations train only when they can be traced back to a train split (`provenance`), unless
the caller says `unchecked_source`. Activation (gradient) checkpointing, which trl turns on by
default, is off unless asked for: it trades ~20% more compute for memory, slow on a CPU.

Everything is checked before anything loads, and the run trains in a folder beside OUT that
becomes OUT only when the checkpoint and `train_log.json` are complete: a failed or killed run
leaves OUT as it was.
"""

from __future__ import annotations

import json
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from nvcc_opt_train.conversations import read_dataset
from nvcc_opt_train.provenance import check_source
from nvcc_opt_train.student import StudentError, check_student, refuse_nonempty
from nvcc_opt_train.turns import Budget, Turns, all_examples, hf_reply_tokens, model_context

TRAIN_LOG = "train_log.json"


@dataclass(frozen=True)
class SFTSettings:
    """What `nvcc-opt train sft` takes besides its paths."""

    epochs: float = 3.0  # passes over the dataset (unless max_steps stops earlier)
    max_steps: int = -1  # optimizer steps; -1: as many as the epochs take
    lr: float = 2e-5  # peak learning rate (LoRA usually wants ~1e-4 or more)
    batch: int = 1  # examples per device per forward pass
    grad_accum: int = 1  # forward passes per optimizer step
    # the context the student will run in (hf:S?context=N) and the tokens its backend keeps for
    # a reply (hf's max_new_tokens): each assistant turn's prompt has its oldest tool results
    # elided to fit as the backend would elide it at that turn (`turns`). None: the student's own
    # context (its max_position_embeddings), the hf backend's default max_new_tokens
    context: int | None = None
    reply_tokens: int | None = None
    # tokens per example (a turn's prompt and reply): a longer one is left out, never cut (its
    # end is a reply); None: the context
    max_length: int | None = None
    lora: bool = False  # train LoRA adapters (peft) and merge them into the saved weights
    seed: int = 0
    activation_checkpointing: bool = False  # recompute activations: less memory, slower steps
    unchecked_source: bool = False  # train on a dataset not traced back to a train split


class TooLong(ValueError):
    """No example is left: every one is longer than the longest the student may train on, or
    its prompt cannot fit the context."""


@dataclass(frozen=True)
class SFTResult:
    out: Path
    source: Path | None  # the problem set whose train split the data came from; None: unchecked
    losses: list[float]  # the training loss at each logged optimizer step, in order
    steps: int
    seconds: float


def train_sft(
    dataset: Path,
    student: Path,
    out: Path,
    settings: SFTSettings,
    warn: Callable[[str], None] = lambda _: None,
) -> SFTResult:
    """Fine-tune `student` on the conversations in `dataset`; the checkpoint goes to `out`.
    ConversationError / ProvenanceError / StudentError (one line each) before anything is
    loaded."""
    refuse_nonempty(out)
    rows = read_dataset(dataset)
    tokenizer = check_student(student)
    source = None if settings.unchecked_source else check_source(dataset, rows)
    if source is None:
        warn(
            f"warning: --unchecked-source: {dataset} is not checked to come from a train split; "
            "evaluation problems among it would be trained on"
        )
    if settings.lora:
        _require("peft", "--lora needs peft: pip install peft")
    budget = _budget(student, settings)
    examples, turns = all_examples(rows, tokenizer, budget)
    _say_turns(turns, budget, warn)
    if not examples:
        raise TooLong(f"{dataset}: no assistant turn left to train on: {_why_none(turns, budget)}")
    work = Path(tempfile.mkdtemp(dir=_existing_parent(out), prefix=f".{out.name}.sft-"))
    try:
        began = time.monotonic()
        trainer = _trainer(examples, student, tokenizer, work / "trainer", settings)
        left_out = _leave_out_long(trainer, budget.max_length, len(examples), dataset, warn)
        trainer.train()
        seconds = time.monotonic() - began
        losses = _save(trainer, tokenizer, student, work / "model", settings)
        log = {
            "dataset": str(dataset),
            "student": str(student),
            "source": str(source) if source else "unchecked (--unchecked-source)",
            "conversations": len(rows),
            "examples": len(examples),
            "context": budget.context,
            "reply_tokens": budget.reply,
            "max_length": budget.max_length,
            # per conversation: per assistant turn trained on, the tool results its prompt elides
            # (as the backend would at that turn); the last turns left out, their prompt unable
            # to fit; the lengths of turns left out alone, longer than max_length
            "elided_tool_results": [t.elided for t in turns],
            "turns_left_out_unfit": [t.unfit for t in turns],
            "turns_left_out_long": [t.long for t in turns],
            "left_out_longer_than_max_length": left_out,  # examples, their lengths in tokens
            "settings": asdict(settings),
            "seconds": seconds,
            "steps": [e for e in trainer.state.log_history if "loss" in e],
            "summary": [e for e in trainer.state.log_history if "train_runtime" in e],
        }
        (work / "model" / TRAIN_LOG).write_text(json.dumps(log, indent=1), encoding="utf-8")
        refuse_nonempty(out)  # again: something may have appeared there while training
        if out.exists():
            out.rmdir()
        (work / "model").rename(out)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return SFTResult(out, source, losses, int(trainer.state.global_step), seconds)


def _trainer(
    examples: list[dict[str, Any]],
    student: Path,
    tokenizer: Any,
    work: Path,
    settings: SFTSettings,
) -> Any:
    """trl's SFTTrainer on prompt-completion `examples` (`turns`), assistant turns only."""
    import datasets  # type: ignore[import-not-found, import-untyped, unused-ignore]
    import torch  # type: ignore[import-not-found, unused-ignore]
    import transformers  # type: ignore[import-not-found, unused-ignore]
    from trl import (  # type: ignore[attr-defined, import-not-found, unused-ignore]
        SFTConfig,
        SFTTrainer,
    )

    # float32 master weights; bf16 autocast where a GPU has it
    model: Any = transformers.AutoModelForCausalLM.from_pretrained(
        student, dtype=torch.float32, local_files_only=True
    )
    cuda = torch.cuda.is_available()
    config = SFTConfig(
        output_dir=str(work),
        num_train_epochs=settings.epochs,
        max_steps=settings.max_steps,
        learning_rate=settings.lr,
        per_device_train_batch_size=settings.batch,
        gradient_accumulation_steps=settings.grad_accum,
        max_length=None,  # never cut: a longer example is left out (turns, _leave_out_long)
        seed=settings.seed,
        assistant_only_loss=True,
        logging_steps=1,
        save_strategy="no",
        report_to="none",
        bf16=cuda and torch.cuda.is_bf16_supported(),
        use_cpu=not cuda,
        dataloader_num_workers=0,
        disable_tqdm=True,
        **_checkpointing(SFTConfig, settings.activation_checkpointing),
    )
    return SFTTrainer(
        model=model,
        args=config,
        train_dataset=datasets.Dataset.from_list(examples).remove_columns(["meta"]),
        processing_class=tokenizer,
        peft_config=_lora_config() if settings.lora else None,
    )


def _budget(student: Path, settings: SFTSettings) -> Budget:
    """The prompt budget of the backend the student will run under, and the example limit."""
    context = settings.context if settings.context is not None else model_context(student)
    reply = settings.reply_tokens if settings.reply_tokens is not None else hf_reply_tokens()
    max_length = settings.max_length if settings.max_length is not None else context
    return Budget(context, reply, max_length)


def _say_turns(turns: list[Turns], budget: Budget, warn: Callable[[str], None]) -> None:
    """Warn about turns whose prompts elide results, and turns left out."""
    room = f"the context of {budget.context} tokens less {budget.reply} for the reply"
    elided = [t for t in turns if any(t.elided)]
    if elided:
        warn(
            f"warning: {len(elided)} of {len(turns)} conversations outgrow {room}: each assistant"
            " turn's prompt has its oldest tool results elided as the model backend would elide "
            f"it at that turn ({sum(len(t.examples) for t in turns)} examples for "
            f"{sum(len(t.elided) for t in turns)} turns)"
        )
    unfit = sum(t.unfit for t in turns)
    if unfit:
        warn(
            f"warning: {unfit} assistant turns of {sum(1 for t in turns if t.unfit)} "
            f"conversations left out: their prompt does not fit {room} even with every older "
            "tool result elided, where the backend would stop the run"
        )
    long = sorted(n for t in turns for n in t.long)
    if long:
        warn(
            f"warning: {len(long)} assistant turns left out: with their prompt they are longer "
            f"than --max-length {budget.max_length} tokens ({', '.join(map(str, long))}), and "
            "cutting one would cut its reply"
        )


def _why_none(turns: list[Turns], budget: Budget) -> str:
    long = sorted(n for t in turns for n in t.long)
    parts = []
    if long:
        parts.append(
            f"{len(long)} are longer than --max-length {budget.max_length} tokens with their "
            f"prompt ({', '.join(map(str, long))}); cutting one would cut its reply"
        )
    unfit = sum(t.unfit for t in turns)
    if unfit:
        parts.append(
            f"{unfit} have a prompt that does not fit the context of {budget.context} tokens "
            f"less {budget.reply} for the reply, even with every older tool result elided"
        )
    return "; ".join(parts) + ". Give a larger --max-length (up to the context) or --context"


def _leave_out_long(
    trainer: Any, max_length: int | None, rows: int, dataset: Path, warn: Callable[[str], None]
) -> list[int]:
    """Leave out of `trainer`'s data the examples longer than `max_length` tokens as trl
    tokenized them, and return their lengths: `turns` leaves out the turns longer than that by
    the student's own count, so this only catches where trl's tokens differ. trl would cut them
    at the end, and the end of an example is a reply, the last one perhaps the final answer: the
    turn the student most needs (a 9,602-token trace of the search policy on an H100 lost all of
    its final answer at 8,192). TooLong when none is left."""
    if max_length is None:
        return []
    data = trainer.train_dataset
    lengths = [len(ids) for ids in data["input_ids"]]
    long = [n for n in lengths if n > max_length]
    if not long:
        return []
    if len(long) == len(lengths):
        raise TooLong(
            f"{dataset}: every example is longer than --max-length {max_length} tokens "
            f"({', '.join(map(str, sorted(long)))}); cutting one would cut its reply. "
            "Give a larger --max-length (up to the student's context) or shorter traces"
        )
    trainer.train_dataset = data.filter(lambda row: len(row["input_ids"]) <= max_length)
    warn(
        f"warning: {len(long)} of {rows} examples are longer than --max-length {max_length}"
        f" tokens ({', '.join(map(str, sorted(long)))}): left out, since cutting one would cut"
        " its reply"
    )
    return sorted(long)


def _checkpointing(config_class: Any, on: bool) -> dict[str, Any]:
    """The setting, by its current name: transformers 5 renamed `gradient_checkpointing` (trl's
    default True, now a deprecated alias that warns) to `activation_checkpointing`."""
    from dataclasses import fields

    names = {f.name for f in fields(config_class)}
    name = (
        "activation_checkpointing"
        if "activation_checkpointing" in names
        else "gradient_checkpointing"
    )
    return {name: on}


def _lora_config() -> Any:
    from peft import LoraConfig  # type: ignore[import-not-found, unused-ignore]

    return LoraConfig(
        r=16, lora_alpha=32, lora_dropout=0.05, target_modules="all-linear", task_type="CAUSAL_LM"
    )


def _save(
    trainer: Any, tokenizer: Any, student: Path, where: Path, settings: SFTSettings
) -> list[float]:
    """The trained weights (LoRA merged) in the student's own dtype, its tokenizer (the same
    tool template), and the losses per step."""
    import transformers  # type: ignore[import-not-found, unused-ignore]

    model = trainer.model
    if settings.lora:
        model = model.merge_and_unload()
    dtype = transformers.AutoConfig.from_pretrained(student, local_files_only=True).dtype
    if dtype is not None:
        model = model.to(dtype)
    model.save_pretrained(where)
    tokenizer.save_pretrained(where)
    return [float(e["loss"]) for e in trainer.state.log_history if "loss" in e]


def _existing_parent(out: Path) -> Path:
    parent = out.absolute().parent
    parent.mkdir(parents=True, exist_ok=True)
    return parent


def _require(module: str, hint: str) -> None:
    import importlib.util

    if importlib.util.find_spec(module) is None:
        raise StudentError(hint)
