"""The service ``instance-ai serve`` runs: the assistant's composition root
(``assistant.factory.build_service``), re-exported for the server's callers."""

from __future__ import annotations

from ..assistant.factory import build_service

__all__ = ["build_service"]
