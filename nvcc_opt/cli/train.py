"""`nvcc-opt train`: the training package's commands where it is installed, else one line that
says how to install it (a build machine keeps the light core install)."""

from __future__ import annotations

from typing import Any

import click

INSTALL = (
    "nvcc-opt train needs the training package, which is not installed: from nvcc-opt's source "
    "tree, pip install ./training (torch, transformers, trl, datasets, accelerate, gguf)"
)


def _missing() -> click.Command:
    @click.command(
        "train",
        context_settings={"ignore_unknown_options": True, "help_option_names": []},
        add_help_option=False,
    )
    @click.argument("args", nargs=-1, type=click.UNPROCESSED)
    def train(args: tuple[str, ...]) -> None:
        """Problem sets, teacher traces, distillation and evaluation (pip install ./training)."""
        raise click.ClickException(INSTALL)

    return train


def _load() -> Any:
    try:
        from nvcc_opt_train.cli import train
    except ModuleNotFoundError as err:
        if err.name is None or not err.name.startswith("nvcc_opt_train"):
            raise
        return _missing()
    return train


train = _load()
