"""``/permissions``: the "always allow" grants of the open thread, and a way to revoke each.

A grant is made on a card with "always allow" (``a``): that tool then runs in this thread
without asking — also after a restart — until it is revoked here. The list comes from
``Client.permissions`` (embedded and our server; n8n keeps its grants in its own settings,
and the screen says so).
"""

from __future__ import annotations

from typing import ClassVar

from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from ...client.base import Client, ClientError
from ...protocol.safe_text import visible
from .. import keymap


class PermissionsScreen(ModalScreen[None]):
    """Lists the thread's grants; the revoke key (Del/d) takes the highlighted one back."""

    KEY_SCOPES = ("permissions",)
    BINDINGS: ClassVar[list[BindingType]] = keymap.bindings("permissions")

    HELP = """
## Permissions

The tools this thread may run without asking ("always allow" on a card).
**{key:permissions-revoke}** revokes the highlighted one: its next call asks again.
"""

    DEFAULT_CSS = """
    PermissionsScreen { align: center middle; }
    PermissionsScreen > Vertical {
        width: 70; max-width: 95%; height: auto; max-height: 80%;
        border: thick $warning; background: $surface; padding: 0 1;
    }
    PermissionsScreen .perm-title { text-style: bold; margin-bottom: 1; }
    PermissionsScreen .perm-hint { color: $text-muted; margin-top: 1; }
    PermissionsScreen OptionList { height: auto; max-height: 16; }
    """

    def __init__(self, client: Client, thread_id: str, title: str = "") -> None:
        super().__init__()
        self.client = client
        self.thread_id = thread_id
        self.thread_title = title
        self.grants: list[str] = []
        self.message = Static("Loading…", classes="perm-message", markup=False)

    def compose(self) -> ComposeResult:
        km = getattr(self.app, "keys", None)
        revoke = keymap.display_keys(km.keys("permissions-revoke")) if isinstance(km, keymap.KeyMap) else "Del"
        close = keymap.display_keys(km.keys("permissions-close")) if isinstance(km, keymap.KeyMap) else "Esc"
        with Vertical():
            yield Static(f"Always allowed in “{self.thread_title or self.thread_id}”", classes="perm-title",
                         markup=False)
            yield self.message
            yield OptionList(id="grants")
            yield Static(f"{revoke} revoke the highlighted tool (it asks again next time) · {close} close",
                         classes="perm-hint", markup=False)
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    async def on_mount(self) -> None:
        await self.reload()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        """Nothing granted: the footer does not offer to revoke, and the key does nothing."""
        return not (action == "revoke" and not self.grants)

    async def reload(self) -> None:
        options = self.query_one("#grants", OptionList)
        try:
            grants = (await self.client.permissions(self.thread_id)).always_allow
        except ClientError as exc:
            self.grants = []
            self.refresh_bindings()
            options.clear_options()
            options.display = False
            self.message.update(visible(f"Cannot list the grants: {exc}"))
            return
        self.grants = list(grants)
        self.refresh_bindings()
        options.clear_options()
        options.add_options([Option(f"✓ {visible(name)} — runs without asking", id=name) for name in self.grants])
        options.display = bool(self.grants)
        self.message.update(
            "Nothing is always allowed here: every tool that asks, asks." if not self.grants else
            f"{len(self.grants)} tool{'s' if len(self.grants) != 1 else ''} run without asking:"
        )
        if self.grants:
            options.highlighted = 0
            options.focus()

    async def action_revoke(self) -> None:
        options = self.query_one("#grants", OptionList)
        index = options.highlighted
        if index is None or not self.grants or index >= len(self.grants):
            self.notify("Nothing to revoke.", severity="warning")
            return
        name = self.grants[index]
        try:
            await self.client.revoke_permission(self.thread_id, name)
        except ClientError as exc:
            self.notify(visible(f"Could not revoke {name}: {exc}"), severity="error", timeout=8)
            return
        self.notify(f"Revoked: {visible(name)} asks again next time.", timeout=4)
        await self.reload()

    def action_close(self) -> None:
        self.dismiss(None)
