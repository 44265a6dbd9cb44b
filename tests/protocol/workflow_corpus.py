"""The corpus of real workflows (``tests/workflow_corpus``, sources and licences in its ``SOURCES.md``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parent.parent / "workflow_corpus"


def corpus_names() -> list[str]:
    return sorted(p.stem for p in CORPUS.glob("*.json"))


@cache
def _text(name: str) -> str:
    return (CORPUS / f"{name}.json").read_text(encoding="utf-8")


def corpus_json(name: str) -> dict[str, Any]:
    """A fresh copy of one workflow's JSON (as exported from n8n)."""
    data = json.loads(_text(name))
    assert isinstance(data, dict)
    return data
