"""The `nvcc-opt` command group: its own options, and each subcommand imported when it runs.

Start-up is what a user waits for on every command: `nvcc-opt --help` imports click and this
module only; `status` adds the store, `optimize` the model and the tools. Which module holds each
command, and the one line `--help` shows for it, is the table in commands.py.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import click

from nvcc_opt.commands import COMMANDS


def load(target: str) -> click.Command:
    """The click command at `"module:attr"`."""
    module, _, attr = target.partition(":")
    command = getattr(importlib.import_module(module), attr)
    if not isinstance(command, click.Command):
        raise TypeError(f"{target} is not a click command")
    return command


class LazyGroup(click.Group):
    """A group whose commands are imported from a table of `name -> ("module:attr", short help)`
    the first time one is asked for; its `--help` lists them from the table without importing."""

    def __init__(self, *args: Any, lazy: Mapping[str, tuple[str, str]], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.lazy = dict(lazy)

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted({*self.commands, *self.lazy})

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in self.commands and cmd_name in self.lazy:
            self.add_command(load(self.lazy[cmd_name][0]), cmd_name)
        return self.commands.get(cmd_name)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """As click's own listing, with the short help of commands not yet imported taken from
        the table."""
        names = self.list_commands(ctx)
        if not names:
            return
        limit = formatter.width - 6 - max(len(name) for name in names)
        rows = []
        for name in names:
            if name in self.commands:
                if self.commands[name].hidden:
                    continue
                text = self.commands[name].get_short_help_str(limit)
            else:
                text = click.Command(name, help=self.lazy[name][1]).get_short_help_str(limit)
            rows.append((name, text))
        with formatter.section("Commands"):
            formatter.write_dl(rows)


@click.group(cls=LazyGroup, lazy=COMMANDS, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="nvcc-opt")
@click.option(
    "--store",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Store database (default: $NVCC_OPT_STORE, `store` in nvcc-opt.toml, "
    "~/.local/share/nvcc-opt/store.db).",
)
@click.pass_context
def cli(ctx: click.Context, store: Path | None) -> None:
    """Substitute reviewed kernel rewrites at compile time.

    As a compiler launcher: nvcc-opt nvcc ARGS... (CMAKE_CUDA_COMPILER_LAUNCHER=nvcc-opt).
    """
    ctx.ensure_object(dict)
    ctx.obj["store"] = store
