"""Model selection: "demo" (or nothing configured) -> the offline demo model; any other name ->
``OpenAIModel`` on the configured (or ``OPENAI_*``) endpoint."""

from __future__ import annotations

from dataclasses import dataclass

from ..config import ModelSettings
from ..runtime.model import ModelAdapter
from .demo import DEMO_LABEL, demo_model


@dataclass(slots=True)
class ModelChoice:
    model: ModelAdapter
    label: str
    is_demo: bool


def is_demo_name(name: str | None) -> bool:
    return name is None or not name.strip() or name.strip().lower() in ("demo", "demo (offline)", "offline")


def select_model(name: str | None = None, settings: ModelSettings | None = None, *, demo_delay: float = 0.0) -> ModelChoice:
    """The model for ``name`` (falls back to ``settings.name``; none -> the demo).

    Raises ``ValueError`` with a clear message when the OpenAI model cannot be built."""
    settings = settings or ModelSettings()
    chosen = name if name is not None else settings.name
    if chosen is None or is_demo_name(chosen):
        return ModelChoice(demo_model(delay=demo_delay), DEMO_LABEL, True)
    from ..runtime.openai_model import OpenAIModel  # imports openai: only when a real model is used

    model = OpenAIModel.from_settings(settings.model_copy(update={"name": chosen.strip()}))
    return ModelChoice(model, chosen.strip(), False)
