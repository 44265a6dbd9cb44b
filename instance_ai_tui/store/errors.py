"""Errors a store raises for conditions a user can cause (bad file, closed store, old app)."""

from __future__ import annotations


class StoreError(RuntimeError):
    """The store cannot do what was asked; the message says why and what to do."""


class StoreClosed(StoreError):
    """The store is not open (``open()`` was not awaited, or ``close()`` already was)."""
