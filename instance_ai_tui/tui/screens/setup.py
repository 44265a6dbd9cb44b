"""The setup screen (issue 13): embedded mode with a model but no API key.

Instead of an app that takes messages and shows nothing, the user reads what is missing and
how to fix it: ``OPENAI_API_KEY`` for the OpenAI API, ``OPENAI_BASE_URL`` for a local
OpenAI-compatible server, or the offline demo (``--model demo``). They can quit, or look at
their threads without sending (a banner then says why sending is off).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Label, Static

from .. import keymap

if TYPE_CHECKING:
    from ...client.base import Client
    from ...config import Settings
    from ..open_thread import Outbox
    from ..ports import Ui


def missing_model_key(client: Client, settings: Settings, env: Mapping[str, str] | None = None) -> str | None:
    """Why an embedded client cannot reach its model, or ``None`` when it can (or is the demo)."""
    if client.mode != "embedded":
        return None
    env = os.environ if env is None else env
    model = settings.model
    if not model.name or model.name == "demo":
        return None
    if model.api_key is not None and model.api_key.get_secret_value().strip():
        return None
    if model.base_url or env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"):
        return None
    return f"no API key for the model {model.name}"


def instructions(model: str) -> str:
    return (
        f"The model {model} needs an API key, and none is set.\n\n"
        "To use the OpenAI API, quit and start again with the key in the environment:\n"
        "    export OPENAI_API_KEY=sk-...\n"
        f"    instance-ai --model {model}\n\n"
        "To use a local OpenAI-compatible server (Ollama, vLLM, LM Studio, ...):\n"
        "    export OPENAI_BASE_URL=http://127.0.0.1:11434/v1\n\n"
        "Both can also go in the config file, as model.api_key and model.base_url.\n\n"
        "To try the app without any model, run the offline demo:\n"
        "    instance-ai --model demo"
    )


class SetupScreen(ModalScreen[str]):
    """Dismisses with ``"quit"`` or ``"browse"`` (look at threads; sending stays off)."""

    DEFAULT_CSS = """
    SetupScreen { align: center middle; }
    SetupScreen > VerticalScroll { width: 84; max-width: 100%; height: auto; max-height: 100%;
                                   border: round $warning; padding: 1 2; background: $surface; }
    SetupScreen .title { text-style: bold; margin-bottom: 1; }
    SetupScreen Horizontal { height: auto; margin-top: 1; }
    SetupScreen Button { margin-right: 2; }
    """

    KEY_SCOPES = ("setup",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("setup")]

    def __init__(self, model: str) -> None:
        super().__init__()
        self.model = model

    def compose(self) -> ComposeResult:
        with VerticalScroll():
            yield Label("Set up a model", classes="title")
            yield Static(instructions(self.model), id="setup-text", markup=False)
            with Horizontal():
                yield Button("Quit", variant="primary", id="setup-quit")
                yield Button("Browse threads without sending", id="setup-browse")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    #: focused once the screen is laid out (a query in on_mount raced its children in CI)
    AUTO_FOCUS = "#setup-quit"

    @on(Button.Pressed, "#setup-quit")
    def action_quit_app(self) -> None:
        self.dismiss("quit")

    @on(Button.Pressed, "#setup-browse")
    def action_browse(self) -> None:
        self.dismiss("browse")


async def check_model_setup(ui: Ui, client: Client, settings: Settings, outbox: Outbox) -> bool:
    """Show the setup screen when the embedded model has no key. Returns ``False`` if the
    person quit; else the outbox refuses to send (and the banner says why). Call from a worker."""
    reason = missing_model_key(client, settings)
    if reason is None:
        return True
    model = settings.model.name or ""
    choice = await ui.push_screen_wait(SetupScreen(model))
    if choice == "quit":
        ui.exit()
        return False
    outbox.block(f"{reason}: set OPENAI_API_KEY (or OPENAI_BASE_URL) and restart, or run "
                 "instance-ai --model demo; nothing can be sent meanwhile.")
    return True
