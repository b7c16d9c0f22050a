"""Errors the store raises: readable, and they name the database file.

Standard library only, so that migrations (which the launcher may run) can raise them without
importing SQLAlchemy.
"""

from __future__ import annotations


class StoreError(Exception):
    """Any store failure, with a message a user can act on."""


class NotFound(StoreError):
    """The record asked for does not exist."""


class InvalidTransition(StoreError):
    """A state change that `records.ALLOWED_TRANSITIONS` (or the one-accepted rule) forbids."""


class StoreDamaged(StoreError):
    """The database was damaged and has been moved aside; the message says where and how to
    recover its decisions."""
