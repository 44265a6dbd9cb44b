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


# --------------------------------------------------------------------------- per-thread models

def context_window(name: str, overrides: dict[str, int] | None = None) -> int | None:
    """The context window of model ``name`` (tokens) from the config's ``model.context_windows`` or the
    runtime's table of well-known models (``runtime/context.py``), or None when neither knows it."""
    from ..runtime.context import known_window

    known = known_window(name, overrides)
    return known[0] if known else None


class ModelCatalog:
    """The models a thread may use: the configured one, ``model.choices`` from the config file, the
    model server's own list (``GET /models``), and the offline demo. Adapters are built once each.

    ``get(name)`` raises ``ValueError`` (with the reason) when a model cannot be built, e.g. no
    API key for a real model."""

    def __init__(self, primary: ModelChoice, settings: ModelSettings, *, demo_delay: float = 0.0) -> None:
        self.primary = primary
        self.settings = settings
        self.demo_delay = demo_delay
        self._adapters: dict[str, ModelAdapter] = {primary.label: primary.model}
        self._owned: list[ModelAdapter] = []

    def get(self, name: str | None) -> ModelAdapter:
        if not name or name == self.primary.label:
            return self.primary.model
        name = name.strip()
        if name not in self._adapters:
            choice = select_model(name, self.settings, demo_delay=self.demo_delay)
            self._adapters[name] = choice.model
            if not choice.is_demo:
                self._owned.append(choice.model)
        return self._adapters[name]

    def label(self, name: str | None) -> str:
        if not name:
            return self.primary.label
        return DEMO_LABEL if is_demo_name(name) else name.strip()

    async def available(self) -> list[str]:
        names: list[str] = [self.primary.label, *self.settings.choices]
        if not self.primary.is_demo or self.settings.base_url:
            names += await self._server_models()
        names.append("demo")
        seen: dict[str, None] = {}
        for name in names:
            if name and name not in seen and not (is_demo_name(name) and any(is_demo_name(s) for s in seen)):
                seen[name] = None
        return list(seen)

    async def _server_models(self) -> list[str]:
        """The model server's ``GET /models`` (OpenAI wire format); nothing when it cannot be read."""
        import asyncio

        lister = getattr(self.primary.model, "list_models", None)
        if lister is None:
            return []
        try:
            return [str(m) for m in await asyncio.wait_for(lister(), 5.0)]
        except Exception:  # noqa: BLE001 — a list that cannot be read is just not offered
            return []

    async def aclose(self) -> None:
        for adapter in self._owned:
            close = getattr(adapter, "aclose", None)
            if close is not None:
                await close()
