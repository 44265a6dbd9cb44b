"""The shared part of the cards for n8n's Instance AI confirmations: which card a confirmation gets,
its wire fields, key hints, the thread's n8n URL, and ``N8nCard`` (title, details, digit keys)."""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from textual import events
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.widgets import Input, Static

from ...protocol.tree import Confirmation, ToolCallState
from .. import keymap
from .confirmations import ConfirmCard, card_keys

#: input types the generic cards of ``confirmations`` answer
KNOWN_INPUT_TYPES = frozenset({"approval", "text", "questions", "plan-review", "resource-decision", "continue"})
#: every field of n8n 2.41's ``confirmationRequestPayloadSchema`` (plus the tree's ``expired``)
KNOWN_FIELDS = frozenset(
    {
        "requestId", "inputThreadId", "toolCallId", "toolName", "args", "severity", "message", "approvalDetails",
        "resourceName", "targetApproval", "credentialRequests", "requireUserSelection", "projectId", "inputType",
        "questions", "introMessage", "tasks", "planItems", "domainAccess", "webSearch", "credentialFlow",
        "credentialDestination", "setupRequests", "workflowId", "resourceDecision", "channelConfig",
        "mcpConnectRequest", "expired",
        "preview",  # ours: the diff an approval card shows (protocol.events.ChangePreview)
    }
)  # fmt: skip



def wire(confirmation: Confirmation) -> dict[str, Any]:
    """The confirmation as n8n sent it (camelCase, extras included)."""
    return confirmation.to_wire()


def card_kind(confirmation: Confirmation) -> str | None:
    """Which n8n card answers ``confirmation``; ``None``: a card of ``confirmations``."""
    data = wire(confirmation)
    input_type = data.get("inputType") or "approval"
    if input_type not in KNOWN_INPUT_TYPES:
        return "unknown"
    declared = _declared_fields(type(confirmation))  # e.g. our server's ``preview`` (a diff for the approval card)
    for key, value in data.items():
        if key not in KNOWN_FIELDS and key not in declared and isinstance(value, (dict, list)) and value:
            return "unknown"  # a newer n8n's request shape: answering it as an approval would be wrong
    if data.get("credentialDestination"):
        return "credential-destination" if _origin(data) else "unknown"
    if data.get("setupRequests"):
        return "setup-workflow" if data.get("workflowId") else "unknown"
    if data.get("credentialRequests"):
        return "credentials"
    if data.get("mcpConnectRequest"):
        servers = (data["mcpConnectRequest"] or {}).get("servers") if isinstance(data["mcpConnectRequest"], dict) else None
        return "mcp-connect" if servers else "unknown"
    if data.get("domainAccess") or data.get("webSearch"):
        return "domain-access"
    if data.get("channelConfig"):
        return "channel-config"
    if data.get("targetApproval") and input_type == "approval":
        return "target-approval"
    if input_type == "continue":
        return "continue"
    return None


@functools.cache
def _declared_fields(model: type[Confirmation]) -> frozenset[str]:
    """The wire names of the fields the confirmation model declares (the cards there read them)."""
    return frozenset(info.alias or name for name, info in model.model_fields.items())



def _origin(data: dict[str, Any]) -> str:
    dest = data.get("credentialDestination")
    return str(dest.get("origin") or "") if isinstance(dest, dict) else ""


def _keys(card: ConfirmCard, binding_id: str) -> str:
    """The keys of ``binding_id`` as the user set them (``[ui.keys]``), for the hints."""
    return keymap.display_keys(card_keys(card).keys(binding_id))


def thread_url(card: ConfirmCard) -> str | None:
    """The thread's page in n8n's web UI (``/instance-ai/<threadId>``), when connected to one."""
    app = card.app
    base = getattr(getattr(app, "client", None), "base_url", None)
    thread = getattr(app, "thread_id", None) or wire(card.confirmation).get("inputThreadId")
    if not isinstance(base, str) or not base or not thread:
        return None
    return f"{base.rstrip('/')}/instance-ai/{thread}"


class N8nCard(ConfirmCard):
    """Shared parts: title, a details block, a key-hint line, digit keys."""

    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("card")]
    #: whether the ``always_allow`` key means anything here
    ALWAYS = False
    KIND = ""

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.data = wire(confirmation)
        self.details = Static("", classes="card-details", markup=False)
        self.keys_line = Static("", classes="card-keys", markup=False)

    def compose(self) -> ComposeResult:
        yield Static(self.title(), classes="card-title", markup=False)
        if self.intro():
            yield Static(self.intro() or "", markup=False)
        yield self.details
        yield from self.extra_widgets()
        yield self.keys_line

    def extra_widgets(self) -> ComposeResult:
        yield from ()

    def on_mount(self) -> None:
        super().on_mount()
        self.refresh_card()

    def refresh_card(self) -> None:
        self.details.update(self.render_details())
        self.keys_line.update(self.render_keys())

    def render_details(self) -> Content:
        return Content("")

    def render_keys(self) -> str:
        return ""

    @property
    def offers_always(self) -> bool:
        """Whether the card offers a lasting grant: where it means something (``ALWAYS``), never
        for a destructive request (n8n 2.41's own card offers only approve and deny then)."""
        return self.ALWAYS and self.confirmation.severity != "destructive"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "always_allow" and not self.offers_always:
            return False
        return super().check_action(action, parameters)

    def action_always_allow(self) -> None:
        """Overridden where "always" means something."""

    def letter(self, key: str) -> bool:
        """A card-specific key (digits, letters); True if handled."""
        return False

    def on_key(self, event: events.Key) -> None:
        if self.armed_key(event):  # a lasting grant waits for its second key
            return
        focused = self.screen.focused
        if isinstance(focused, Input):
            if event.key == "escape":
                event.stop()
                focused.display = False
                self.focus()
                self.refresh_card()
            return
        if event.key in ("tab", "shift+tab"):
            return
        handled = False
        if not (self.in_grace or self.answered):
            handled = self.letter(event.key)
        elif event.key.isdigit() or len(event.key) == 1:
            handled = True  # swallowed during the grace period
        if handled:
            event.stop()
            event.prevent_default()

def _existing(req: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for item in req.get("existingCredentials") or []:
        if isinstance(item, dict) and item.get("id") is not None:
            out.append((str(item["id"]), str(item.get("name") or item["id"])))
    return out
