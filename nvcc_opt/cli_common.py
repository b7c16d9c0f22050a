"""What several commands share."""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import click

from nvcc_opt import paths
from nvcc_opt.store.api import Store, StoreError

T = TypeVar("T")


def open_store(ctx: click.Context) -> Store:
    """The store named by --store, else the configured or default one; errors as click errors."""
    try:
        path = ctx.find_root().obj["store"] or paths.store_path()
        return Store.open(path)
    except (StoreError, ValueError) as exc:  # ValueError: a broken nvcc-opt.toml
        raise click.ClickException(str(exc)) from exc


def user_errors(work: Callable[[], T], *more: type[Exception]) -> T:
    """Run a command's work; what a user can fix (a store error, an unreadable file, and the
    command's own `more`) becomes a message and exit code 1."""
    caught: tuple[type[Exception], ...] = (StoreError, *more)
    try:
        return work()
    except caught as exc:
        raise click.ClickException(str(exc)) from exc
    except OSError as exc:
        raise click.ClickException(f"{exc.filename}: {exc.strerror}") from exc
