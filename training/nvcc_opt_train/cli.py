"""`nvcc-opt train`: the group, its commands imported when they run (the table in commands.py)."""

from __future__ import annotations

import click

from nvcc_opt.cli import LazyGroup
from nvcc_opt_train.commands import COMMANDS


@click.group(
    "train", cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]}
)
def train() -> None:
    """Problem sets, teacher traces, distillation and evaluation (pip install ./training)."""
