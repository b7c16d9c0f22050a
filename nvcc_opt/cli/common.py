"""What several commands share."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, TypeVar

import click

from nvcc_opt import paths
from nvcc_opt.store.errors import StoreError

if TYPE_CHECKING:
    from nvcc_opt.store.api import Store
    from nvcc_opt.store.read import Reader

T = TypeVar("T")


def open_store(ctx: click.Context) -> Store:
    """The store named by --store, else the configured or default one; errors as click errors."""
    from nvcc_opt.store.api import Store  # SQLAlchemy: only for commands that need it

    try:
        return Store.open(_store_path(ctx))
    except (StoreError, ValueError) as exc:  # ValueError: a broken nvcc-opt.toml
        raise click.ClickException(str(exc)) from exc


def open_for_reading(ctx: click.Context) -> Reader | Store:
    """For commands that only show the store: a standard-library reader where the store is
    healthy and current (no SQLAlchemy to import), else `open_store`, which says what is wrong."""
    from nvcc_opt.store.read import open_reader

    try:
        reader = open_reader(_store_path(ctx))
    except ValueError as exc:  # a broken nvcc-opt.toml
        raise click.ClickException(str(exc)) from exc
    return reader if reader is not None else open_store(ctx)


def _store_path(ctx: click.Context) -> str:
    return str(ctx.find_root().obj["store"] or paths.store_path())


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
