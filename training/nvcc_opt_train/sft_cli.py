"""`nvcc-opt train sft DATASET.jsonl --student PATH --out DIR [...]`: click wiring only."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt_train.conversations import ConversationError
from nvcc_opt_train.provenance import ProvenanceError
from nvcc_opt_train.sft import TRAIN_LOG, SFTSettings, TooLong, train_sft
from nvcc_opt_train.student import StudentError

DEFAULTS = SFTSettings()


@click.command("sft")
@click.argument("dataset", type=click.Path(path_type=Path))
@click.option(
    "--student",
    required=True,
    type=click.Path(path_type=Path),
    help="A student checkpoint folder (nvcc-opt train student makes one).",
)
@click.option("--out", required=True, type=click.Path(path_type=Path), help="New folder.")
@click.option("--epochs", type=float, default=DEFAULTS.epochs, show_default=True)
@click.option(
    "--max-steps", type=int, default=DEFAULTS.max_steps, show_default=True, help="-1: epochs."
)
@click.option("--lr", type=float, default=DEFAULTS.lr, show_default=True)
@click.option("--batch", type=click.IntRange(min=1), default=DEFAULTS.batch, show_default=True)
@click.option(
    "--grad-accum", type=click.IntRange(min=1), default=DEFAULTS.grad_accum, show_default=True
)
@click.option(
    "--context",
    type=click.IntRange(min=16),
    default=None,
    help="Tokens of context the student will run with (hf:OUT?context=N). Each assistant turn "
    "trains on the prompt the hf backend would show it: its oldest tool results elided as the "
    "backend elides them at that turn to keep the prompt and --reply-tokens within this; a turn "
    "whose prompt cannot fit is left out with the turns after it. Default: the student's own "
    "context (its max_position_embeddings), as the hf backend takes it.",
)
@click.option(
    "--reply-tokens",
    type=click.IntRange(min=1),
    default=None,
    help="Tokens the backend keeps for a reply (hf:OUT?max_new_tokens=N). Default: the hf "
    "backend's default max_new_tokens.",
)
@click.option(
    "--max-length",
    type=click.IntRange(min=16),
    default=None,
    help="Tokens per example (a turn's prompt and reply, or consecutive turns whose prompts "
    "agree). A longer turn is left out, since cutting it would cut its reply. Default: the "
    "context.",
)
@click.option("--lora", is_flag=True, help="Train LoRA adapters (peft), merged before saving.")
@click.option("--seed", type=int, default=DEFAULTS.seed, show_default=True)
@click.option(
    "--activation-checkpointing",
    is_flag=True,
    help="Recompute activations in the backward pass: less GPU memory, slower steps.",
)
@click.option(
    "--unchecked-source",
    is_flag=True,
    help="Train on DATASET even when it cannot be traced back to a problem set's train split "
    "(a merged or hand-made dataset): evaluation problems may then leak into training.",
)
def sft(
    dataset: Path,
    student: Path,
    out: Path,
    epochs: float,
    max_steps: int,
    lr: float,
    batch: int,
    grad_accum: int,
    context: int | None,
    reply_tokens: int | None,
    max_length: int | None,
    lora: bool,
    seed: int,
    activation_checkpointing: bool,
    unchecked_source: bool,
) -> None:
    """Fine-tune a student on DATASET (conversations from nvcc-opt train collect), loss on the
    assistant's turns only (tool calls and their arguments included, tool results masked); the
    checkpoint in OUT loads with nvcc-opt optimize --model hf:OUT. DATASET must be the
    sft.jsonl of a collect folder whose runs are of a problem set's train split (checked)."""
    settings = SFTSettings(
        epochs=epochs,
        max_steps=max_steps,
        lr=lr,
        batch=batch,
        grad_accum=grad_accum,
        context=context,
        reply_tokens=reply_tokens,
        max_length=max_length,
        lora=lora,
        seed=seed,
        activation_checkpointing=activation_checkpointing,
        unchecked_source=unchecked_source,
    )
    try:
        result = train_sft(dataset, student, out, settings, lambda line: click.echo(line, err=True))
    except (ConversationError, ProvenanceError, StudentError, TooLong) as err:
        raise click.ClickException(str(err)) from err
    first, last = (result.losses[0], result.losses[-1]) if result.losses else (0.0, 0.0)
    click.echo(
        f"trained {result.steps} steps in {result.seconds:.1f} s, loss {first:.4f} -> {last:.4f}; "
        f"checkpoint: {result.out} (loss per step: {result.out / TRAIN_LOG})"
    )
