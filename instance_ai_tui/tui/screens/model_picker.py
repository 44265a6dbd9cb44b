"""``/model``: choose the model of the open thread (embedded and our server).

``ModelPicker(models)`` lists ``ModelList.models`` (the one in use marked, context windows
where known) and dismisses with the chosen name, or ``None`` (Esc).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.binding import BindingType
from textual.widgets.option_list import Option

from ...protocol.api import ModelList
from ...protocol.safe_text import visible
from ...protocol.usage_words import format_tokens
from .. import keymap
from .list_picker import ListPicker


class ModelPicker(ListPicker[str]):
    DEFAULT_CSS = """
    ModelPicker { align: center middle; }
    ModelPicker > Vertical {
        width: 70; max-width: 100%; height: auto; max-height: 90%;
        padding: 1 2; border: round $primary; background: $surface;
    }
    ModelPicker OptionList { height: auto; max-height: 20; margin: 1 0; }
    ModelPicker .hint { color: $text-muted; }
    """
    KEY_SCOPES = ("model_picker",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("model_picker")]

    def __init__(self, models: ModelList) -> None:
        rows = []
        for model in models.models:
            label = Text.assemble(
                ("● " if model.name == models.current else "  ", "bold"),
                (visible(model.name), "bold" if model.name == models.current else ""),
                (f"  {format_tokens(model.context_window)} context" if model.context_window else "", "dim"),
                ("  (default)" if model.name == models.default else "", "dim italic"),
            )
            rows.append((Option(label, id=model.name), model.name))
        names = [m.name for m in models.models]
        super().__init__("Model of this thread (from its next message on)",
                         "Enter: use it · Esc: keep the current one", "model-list", rows,
                         names.index(models.current) if models.current in names else 0)
        self.models = models
