"""``/model``: choose the model of the open thread (embedded and our server).

``ModelPicker(models)`` lists ``ModelList.models`` (the one in use marked, context windows
where known) and dismisses with the chosen name, or ``None`` (Esc).
"""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

from ...protocol.api import ModelList
from ...protocol.safe_text import visible
from ...protocol.usage_words import format_tokens
from .. import keymap


class ModelPicker(ModalScreen[str | None]):
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
        super().__init__()
        self.models = models

    def compose(self) -> ComposeResult:
        options = []
        for model in self.models.models:
            label = Text.assemble(
                ("● " if model.name == self.models.current else "  ", "bold"),
                (visible(model.name), "bold" if model.name == self.models.current else ""),
                (f"  {format_tokens(model.context_window)} context" if model.context_window else "", "dim"),
                ("  (default)" if model.name == self.models.default else "", "dim italic"),
            )
            options.append(Option(label, id=model.name))
        with Vertical():
            yield Label("Model of this thread (from its next message on)")
            yield OptionList(*options, id="model-list")
            yield Label("Enter: use it · Esc: keep the current one", classes="hint")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        names = [m.name for m in self.models.models]
        options.highlighted = names.index(self.models.current) if self.models.current in names else 0
        options.focus()

    @on(OptionList.OptionSelected, "#model-list")
    def _chosen(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(event.option.id)

    def action_choose(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.dismiss(options.get_option_at_index(options.highlighted).id)

    def action_cancel(self) -> None:
        self.dismiss(None)
