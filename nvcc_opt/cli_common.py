"""What several commands share."""

from __future__ import annotations

import click

from nvcc_opt import paths
from nvcc_opt.store.api import Store, StoreError


def open_store(ctx: click.Context) -> Store:
    """The store named by --store, else the configured or default one; errors as click errors."""
    try:
        path = ctx.find_root().obj["store"] or paths.store_path()
        return Store.open(path)
    except (StoreError, ValueError) as exc:  # ValueError: a broken nvcc-opt.toml
        raise click.ClickException(str(exc)) from exc
