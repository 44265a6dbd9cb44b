"""The one modal list ``/model`` and ``/rewind`` choose from: Enter (or a click) dismisses with the
highlighted row's value, Esc with ``None``; each subclass gives its rows, its CSS and its key scope."""

from __future__ import annotations

from typing import TypeVar

from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, Label, OptionList
from textual.widgets.option_list import Option

T = TypeVar("T")


class ListPicker(ModalScreen[T | None]):
    def __init__(self, title: str, hint: str, list_id: str, rows: list[tuple[Option, T]], start: int = 0) -> None:
        super().__init__()
        self._heading, self._hint, self._list_id, self._start = title, hint, list_id, start
        self._options = [option for option, _value in rows]
        self._values = [value for _option, value in rows]

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label(self._heading)
            yield OptionList(*self._options, id=self._list_id)
            yield Label(self._hint, classes="hint")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        options = self.query_one(OptionList)
        options.highlighted = self._start
        options.focus()

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        self.dismiss(self._values[event.option_index])

    def action_choose(self) -> None:
        options = self.query_one(OptionList)
        if options.highlighted is not None:
            self.dismiss(self._values[options.highlighted])

    def action_cancel(self) -> None:
        self.dismiss(None)
