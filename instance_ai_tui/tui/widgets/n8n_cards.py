"""Cards for the confirmation shapes of n8n's Instance AI (api-types 1.41 / n8n 2.41).

``build_n8n_card`` picks the card for a confirmation from its fields (reference
``n8n-instance-ai-wire-protocol.md`` §3.3) and ``confirmations.build_card`` asks it first;
``None`` leaves the request to the generic cards there (approval, text, questions, plan
review, resource decision). Every card posts the ``kind`` body n8n expects (§4):

* ``credentialRequests`` → ``CredentialsCard``: a credential per type (``credentialSelection``)
  or n8n sets one up (``credentialAutoSetup``);
* ``credentialDestination`` → ``CredentialDestinationCard`` (``credentialDestination``);
* ``setupRequests`` + ``workflowId`` → ``SetupWorkflowCard``: per node credentials,
  parameters, skip; apply (``setupWorkflowApply``) or test a trigger
  (``setupWorkflowTestTrigger``);
* ``mcpConnectRequest`` → ``McpConnectCard`` (``mcpConnect`` with the chosen servers);
* ``domainAccess`` / ``webSearch`` → ``DomainAccessCard`` (``domainAccessApprove`` with the
  chosen action, ``domainAccessDeny``);
* ``channelConfig`` → ``ChannelConfigCard``, ``targetApproval`` → ``TargetApprovalCard``,
  ``inputType: continue`` → ``ContinueCard`` (``approval``);
* anything this client does not know → ``UnknownRequestCard``: every field, no answer, the
  thread's n8n URL to finish it in the browser.

Every card keeps the base card's grace period (keys are ignored for ``GRACE_SECONDS`` after
it appears) and answers through ``ConfirmCard.answer``. The card is built from the
confirmation alone, so a card restored from history looks the same as the live one.
"""

from __future__ import annotations

import functools
from typing import Any, ClassVar

from textual import events, on
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.content import Content
from textual.widgets import Input, Static

from ...protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    CredentialAutoSetupConfirm,
    CredentialDestinationConfirm,
    CredentialSelectionConfirm,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    McpConnectConfirm,
    SetupWorkflowApplyConfirm,
    SetupWorkflowTestTriggerConfirm,
)
from ...protocol.tree import Confirmation, ToolCallState
from .. import keymap
from .confirmations import ConfirmCard, short_json

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

#: card kind -> (what it asks, its keys) for the help and the README
CARD_KINDS: dict[str, tuple[str, str]] = {
    "credentials": ("credentialRequests", "1–9 pick a credential · ↑/↓ credential type · s let n8n set it up · y/Enter use · n skip"),
    "credential-destination": ("credentialDestination", "y/Enter allow · n refuse"),
    "setup-workflow": (
        "setupRequests + workflowId",
        "↑/↓ node · 1–9 credential · e fill parameters · s skip node · t test trigger · y/Enter apply · n cancel",
    ),
    "mcp-connect": ("mcpConnectRequest", "1–9 toggle a server · y/Enter connect · n not now"),
    "domain-access": ("domainAccess / webSearch", "y/Enter allow once · d allow the domain · a allow all · n deny"),
    "channel-config": ("channelConfig", "y/Enter done (set up in n8n) · n skip"),
    "target-approval": ("targetApproval", "y/Enter approve · a always in this thread · n deny"),
    "continue": ("inputType: continue", "y/Enter continue · n stop"),
    "unknown": ("anything else", "no keys answer it: open the thread's n8n URL in a browser"),
}


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


def build_n8n_card(tool: ToolCallState, confirmation: Confirmation) -> ConfirmCard | None:
    kind = card_kind(confirmation)
    if kind is None:
        return None
    return CARD_CLASSES[kind](tool, confirmation)


def _origin(data: dict[str, Any]) -> str:
    dest = data.get("credentialDestination")
    return str(dest.get("origin") or "") if isinstance(dest, dict) else ""


def _keys(card: ConfirmCard, binding_id: str) -> str:
    """The keys of ``binding_id`` as the user set them (``[ui.keys]``), for the hints."""
    keys = getattr(card.app, "keys", None)
    if isinstance(keys, keymap.KeyMap):
        return keymap.display_keys(keys.keys(binding_id))
    return keymap.display_keys(keymap.spec(binding_id).keys)


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

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "always_allow":
            return self.ALWAYS
        return True

    def action_always_allow(self) -> None:
        """Overridden where "always" means something."""

    def letter(self, key: str) -> bool:
        """A card-specific key (digits, letters); True if handled."""
        return False

    def on_key(self, event: events.Key) -> None:
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


# --------------------------------------------------------------------------- credentials


class CredentialsCard(N8nCard):
    HELP = """
## Credentials

n8n needs a credential per type. **1–9** pick one of your credentials for the selected type
(**↑**/**↓** select the type) · **s** let n8n set up a new one for the selected type ·
**y**/**Enter** use the picked credentials · **n** skip.
"""

    KIND = "credentials"

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.requests: list[dict[str, Any]] = [r for r in self.data.get("credentialRequests") or [] if isinstance(r, dict)]
        self.cursor = 0
        self.chosen: dict[str, str] = {}
        must_pick = bool(self.data.get("requireUserSelection"))
        for req in self.requests:
            existing = _existing(req)
            if existing and not must_pick and not req.get("preferNew"):
                self.chosen[str(req.get("credentialType"))] = existing[0][0]

    def title(self) -> Content:
        finalize = (self.data.get("credentialFlow") or {}).get("stage") == "finalize"
        head = "🔑 Choose the credential to use" if finalize else "🔑 Credentials needed"
        return Content.assemble((head, "bold"), "  ", self.confirmation.message or "")

    def render_details(self) -> Content:
        parts: list[tuple[str, str] | str] = []
        for i, req in enumerate(self.requests):
            ctype = str(req.get("credentialType") or "?")
            here = i == self.cursor
            pick = self.chosen.get(ctype)
            name = next((n for cid, n in _existing(req) if cid == pick), None)
            parts.append(("▸ " if here else "  ", "$text-accent"))
            parts.append((ctype, "bold"))
            parts.append(("  → " + (name or "not chosen") + "\n", "$text-success" if name else "$text-warning"))
            if req.get("reason"):
                parts.append(f"    {req['reason']}\n")
            hint = _setup_hint(req)
            if hint:
                parts.append((f"    {hint}\n", "$text-muted"))
            if here:
                for n, (cid, cname) in enumerate(_existing(req)[:9], 1):
                    parts.append((f"    {n}. ", "$text-accent"))
                    parts.append(("● " if cid == pick else "○ ") + cname + "\n")
                if not _existing(req):
                    parts.append(("    you have no credential of this type: s lets n8n set one up\n", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        ok = _keys(self, "approve")
        return f"1–9 pick · ↑/↓ type · s n8n sets it up · {ok} use these · {_keys(self, 'deny')} skip"

    def letter(self, key: str) -> bool:
        if not self.requests:
            return False
        req = self.requests[self.cursor]
        if key.isdigit() and key != "0":
            existing = _existing(req)
            n = int(key)
            if n <= len(existing):
                self.chosen[str(req.get("credentialType"))] = existing[n - 1][0]
                self.cursor = min(self.cursor + 1, len(self.requests) - 1) if len(self.requests) > 1 else 0
                self.refresh_card()
            return True
        if key in ("down", "j"):
            self.cursor = (self.cursor + 1) % len(self.requests)
            self.refresh_card()
            return True
        if key in ("up", "k"):
            self.cursor = (self.cursor - 1) % len(self.requests)
            self.refresh_card()
            return True
        if key == "s":
            ctype = str(req.get("credentialType"))
            self.answer(CredentialAutoSetupConfirm(credential_type=ctype), f"n8n sets up a {ctype} credential")
            return True
        return False

    def action_approve(self) -> None:
        missing = [str(r.get("credentialType")) for r in self.requests if str(r.get("credentialType")) not in self.chosen]
        if missing:
            if not self.in_grace and not self.answered:
                self.notify(f"Pick a credential for {', '.join(missing)} (1–9), or s to let n8n set it up.", severity="warning")
            return
        names = ", ".join(f"{t}: {_cred_name(self.requests, t, i)}" for t, i in self.chosen.items())
        self.answer(CredentialSelectionConfirm(credentials=dict(self.chosen)), f"using {names}")

    def action_deny(self) -> None:
        self.answer(ApprovalConfirm(approved=False), "skipped")


def _existing(req: dict[str, Any]) -> list[tuple[str, str]]:
    out = []
    for item in req.get("existingCredentials") or []:
        if isinstance(item, dict) and item.get("id") is not None:
            out.append((str(item["id"]), str(item.get("name") or item["id"])))
    return out


def _cred_name(requests: list[dict[str, Any]], ctype: str, cid: str) -> str:
    for req in requests:
        if str(req.get("credentialType")) == ctype:
            for i, name in _existing(req):
                if i == cid:
                    return name
    return cid


def _setup_hint(req: dict[str, Any]) -> str:
    hint = req.get("setupHint")
    bits = []
    if req.get("suggestedName"):
        bits.append(f"suggested name: {req['suggestedName']}")
    if isinstance(hint, dict):
        if hint.get("serviceHost"):
            bits.append(f"service: {hint['serviceHost']}")
        if hint.get("docsUrl"):
            bits.append(f"docs: {hint['docsUrl']}")
        placeholders = [p.get("name") or p.get("label") for p in hint.get("placeholders") or [] if isinstance(p, dict)]
        if placeholders:
            bits.append("needs: " + ", ".join(str(p) for p in placeholders if p))
    return " · ".join(bits)


class CredentialDestinationCard(N8nCard):
    HELP = """
## Send a credential

A credential is about to be sent to the origin shown. **y**/**Enter** allow · **n** refuse.
"""

    KIND = "credential-destination"

    def title(self) -> Content:
        return Content.assemble(("🔐 Send a credential to ", "bold"), (_origin(self.data), "bold $text-accent"), "?")

    def render_details(self) -> Content:
        dest = self.data.get("credentialDestination") or {}
        nodes = ", ".join(str(n) for n in dest.get("nodeNames") or [])
        lines = [self.confirmation.message or ""]
        if nodes:
            lines.append(f"used by: {nodes}")
        return Content("\n".join(line for line in lines if line))

    def render_keys(self) -> str:
        return f"{_keys(self, 'approve')} allow · {_keys(self, 'deny')} refuse"

    def action_approve(self) -> None:
        self.answer(CredentialDestinationConfirm(approved=True, origin=_origin(self.data)), f"allowed {_origin(self.data)}")

    def action_deny(self) -> None:
        self.answer(CredentialDestinationConfirm(approved=False, origin=_origin(self.data)), f"refused {_origin(self.data)}")


# --------------------------------------------------------------------------- workflow setup


class SetupWorkflowCard(N8nCard):
    HELP = """
## Workflow setup

One line per node that needs setting up. **↑**/**↓** select a node · **1–9** pick its
credential · **e** fill its parameters (one field at a time, Enter next, Esc stop) ·
**s** skip / unskip it · **t** test the selected trigger · **y**/**Enter** apply · **n** cancel.
"""

    KIND = "setup-workflow"

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.nodes: list[dict[str, Any]] = [n for n in self.data.get("setupRequests") or [] if isinstance(n, dict)]
        self.cursor = 0
        self.node_credentials: dict[str, dict[str, str]] = {}
        self.node_parameters: dict[str, dict[str, Any]] = {}
        self.skipped: list[str] = []
        self._editing: list[dict[str, Any]] = []  # parameters left to fill on the selected node
        self.field = Input(placeholder="value — Enter next, Esc stop", id="param")
        self.field.display = False

    def extra_widgets(self) -> ComposeResult:
        yield self.field

    def title(self) -> Content:
        return Content.assemble(("⚙ Set up workflow ", "bold"), (str(self.data.get("workflowId")), "$text-accent"), "  ",
                                self.confirmation.message or "")

    @staticmethod
    def name_of(node: dict[str, Any]) -> str:
        inner = node.get("node")
        return str(inner.get("name")) if isinstance(inner, dict) else "?"

    def _credential_of(self, node: dict[str, Any]) -> str | None:
        """The credential id the node will use: the user's pick, else the one it has."""
        name, ctype = self.name_of(node), node.get("credentialType")
        if not ctype:
            return None
        picked = self.node_credentials.get(name, {}).get(str(ctype))
        if picked:
            return picked
        current = ((node.get("node") or {}).get("credentials") or {}).get(str(ctype))
        return str(current["id"]) if isinstance(current, dict) and current.get("id") else None

    def _params(self, node: dict[str, Any]) -> list[dict[str, Any]]:
        editable = [p for p in node.get("editableParameters") or [] if isinstance(p, dict) and p.get("name")]
        issues = node.get("parameterIssues") or {}
        wanted = [p for p in editable if p["name"] in issues] or editable
        return wanted

    def render_details(self) -> Content:
        parts: list[tuple[str, str] | str] = []
        for i, node in enumerate(self.nodes):
            name = self.name_of(node)
            here = i == self.cursor
            skipped = name in self.skipped
            inner = node.get("node") or {}
            mark = "⊘" if skipped else ("✔" if node.get("needsAction") is False else "●")
            parts.append(("▸ " if here else "  ", "$text-accent"))
            parts.append((f"{mark} {name}", "bold" if not skipped else "$text-muted strike"))
            parts.append((f"  {inner.get('type', '')}" + ("  trigger" if node.get("isTrigger") else "") + "\n", "$text-muted"))
            ctype = node.get("credentialType")
            if ctype:
                cid = self._credential_of(node)
                cname = next((n for i2, n in _existing(node) if i2 == cid), cid)
                parts.append(f"    credential {ctype}: ")
                parts.append((cname or "none", "$text-success" if cname else "$text-warning"))
                test = node.get("credentialTestResult")
                if isinstance(test, dict):
                    parts.append(("  tested ok" if test.get("success") else f"  test failed: {test.get('message', '')}",
                                  "$text-muted"))
                parts.append("\n")
                if here:
                    for n, (cid2, cname2) in enumerate(_existing(node)[:9], 1):
                        parts.append((f"      {n}. ", "$text-accent"))
                        parts.append(("● " if cid2 == cid else "○ ") + cname2 + "\n")
            issues = node.get("parameterIssues") or {}
            for param in self._params(node):
                value = self.node_parameters.get(name, {}).get(param["name"])
                problem = "; ".join(issues.get(param["name"]) or [])
                parts.append(f"    {param.get('displayName') or param['name']}: ")
                if value is not None:
                    parts.append((short_json(value, 60), "$text-success"))
                else:
                    parts.append((problem or "(unchanged)", "$text-warning" if problem else "$text-muted"))
                parts.append("\n")
            trig = node.get("triggerTestResult")
            if isinstance(trig, dict):
                parts.append((f"    trigger test: {trig.get('status')} {trig.get('error') or ''}\n", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        test = " · t test trigger" if self.nodes and self._testable(self.nodes[self.cursor]) else ""
        return (f"↑/↓ node · 1–9 credential · e parameters · s skip{test} · "
                f"{_keys(self, 'approve')} apply · {_keys(self, 'deny')} cancel")

    @staticmethod
    def _testable(node: dict[str, Any]) -> bool:
        return bool(node.get("isTrigger")) and node.get("isTestable") is not False

    def letter(self, key: str) -> bool:
        if not self.nodes:
            return False
        node = self.nodes[self.cursor]
        name = self.name_of(node)
        if key in ("down", "j"):
            self.cursor = (self.cursor + 1) % len(self.nodes)
        elif key in ("up", "k"):
            self.cursor = (self.cursor - 1) % len(self.nodes)
        elif key.isdigit() and key != "0":
            existing = _existing(node)
            n = int(key)
            if node.get("credentialType") and n <= len(existing):
                self.node_credentials.setdefault(name, {})[str(node["credentialType"])] = existing[n - 1][0]
        elif key == "s":
            if name in self.skipped:
                self.skipped.remove(name)
            else:
                self.skipped.append(name)
        elif key == "e":
            self._editing = list(self._params(node))
            if not self._editing:
                self.notify(f"{name} has no parameters to fill.", severity="warning")
                return True
            self._edit_next()
            return True
        elif key == "t":
            if not self._testable(node):
                self.notify(f"{name} is not a trigger that can be tested.", severity="warning")
                return True
            body = SetupWorkflowTestTriggerConfirm(
                test_trigger_node=name,
                node_credentials=self._creds_body(),
                node_parameters=self._params_body(),
            )
            self.answer(body, f"testing trigger {name}")
            return True
        else:
            return False
        self.refresh_card()
        return True

    def _edit_next(self) -> None:
        if not self._editing:
            self.field.display = False
            self.focus()
            self.refresh_card()
            return
        param = self._editing[0]
        name = self.name_of(self.nodes[self.cursor])
        options = ", ".join(str(o.get("value")) for o in param.get("options") or [] if isinstance(o, dict))
        self.field.placeholder = (f"{param.get('displayName') or param['name']} ({param.get('type', 'string')})"
                                  + (f" one of: {options}" if options else "") + " — Enter next, Esc stop")
        current = self.node_parameters.get(name, {}).get(param["name"])
        self.keys_line.update(
            f"{name} › {param.get('displayName') or param['name']} ({param.get('type', 'string')})"
            + (f", one of: {options}" if options else "")
            + " — type the value, Enter next, Esc stop"
        )
        self.field.value = "" if current is None else str(current)
        self.field.display = True
        self.field.focus()

    @on(Input.Submitted, "#param")
    def _param_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        if not self._editing or self.answered:
            return
        param = self._editing.pop(0)
        name = self.name_of(self.nodes[self.cursor])
        text = event.value.strip()
        if text:
            self.node_parameters.setdefault(name, {})[param["name"]] = _typed(text, param)
        self._edit_next()

    def _creds_body(self) -> dict[str, dict[str, str]] | None:
        return {k: dict(v) for k, v in self.node_credentials.items() if v and k not in self.skipped} or None

    def _params_body(self) -> dict[str, dict[str, Any]] | None:
        return {k: dict(v) for k, v in self.node_parameters.items() if v and k not in self.skipped} or None

    def action_approve(self) -> None:
        if self.field.has_focus:
            return
        body = SetupWorkflowApplyConfirm(
            node_credentials=self._creds_body(),
            node_parameters=self._params_body(),
            skipped_nodes=list(self.skipped) or None,
        )
        skipped = f", skipped {', '.join(self.skipped)}" if self.skipped else ""
        self.answer(body, f"setup applied{skipped}")

    def action_deny(self) -> None:
        self.answer(ApprovalConfirm(approved=False), "setup cancelled")


def _typed(text: str, param: dict[str, Any]) -> Any:
    """The typed value for a parameter of ``param['type']`` (n8n's property types)."""
    kind = str(param.get("type") or "string")
    for option in param.get("options") or []:
        if isinstance(option, dict) and str(option.get("value")) == text:
            return option.get("value")
    if kind == "number":
        try:
            return int(text) if text.lstrip("-").isdigit() else float(text)
        except ValueError:
            return text
    if kind == "boolean":
        return text.lower() in ("true", "yes", "1", "y", "on")
    return text


# --------------------------------------------------------------------------- MCP


class McpConnectCard(N8nCard):
    HELP = """
## Connect MCP servers

**1–9** toggle a server · **y**/**Enter** connect the ticked ones · **n** not now.
"""

    KIND = "mcp-connect"

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        request = self.data.get("mcpConnectRequest") or {}
        self.servers: list[dict[str, Any]] = [s for s in request.get("servers") or [] if isinstance(s, dict)]
        self.ticked: list[str] = [str(s.get("serverSlug")) for s in self.servers]

    def title(self) -> Content:
        return Content.assemble(("🧩 Available tools  ", "bold"), self.confirmation.message or "Connect MCP servers?")

    def render_details(self) -> Content:
        parts: list[tuple[str, str] | str] = []
        for n, server in enumerate(self.servers[:9], 1):
            slug = str(server.get("serverSlug"))
            parts.append((f"{n}. ", "$text-accent"))
            parts.append("[x] " if slug in self.ticked else "[ ] " )
            parts.append((str(server.get("title") or slug), "bold"))
            if server.get("tagline"):
                parts.append(f" — {server['tagline']}")
            creds = ", ".join(str(c.get("name") or c.get("credentialType")) for c in server.get("usesCredentials") or []
                              if isinstance(c, dict))
            parts.append((f"\n     uses: {creds}\n" if creds else "\n", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        return f"1–{min(len(self.servers), 9)} toggle · {_keys(self, 'approve')} connect · {_keys(self, 'deny')} not now"

    def letter(self, key: str) -> bool:
        if key.isdigit() and key != "0":
            n = int(key)
            if n <= len(self.servers):
                slug = str(self.servers[n - 1].get("serverSlug"))
                if slug in self.ticked:
                    self.ticked.remove(slug)
                else:
                    self.ticked.append(slug)
                self.refresh_card()
            return True
        return False

    def action_approve(self) -> None:
        if not self.ticked:
            if not self.in_grace and not self.answered:
                self.notify("Tick a server (1–9) to connect, or n for not now.", severity="warning")
            return
        order = [str(s.get("serverSlug")) for s in self.servers if str(s.get("serverSlug")) in self.ticked]
        self.answer(McpConnectConfirm(approved=True, connected_slugs=order), f"connect {', '.join(order)}")

    def action_deny(self) -> None:
        self.answer(McpConnectConfirm(approved=False), "not connected")


# --------------------------------------------------------------------------- domains and web search


class DomainAccessCard(N8nCard):
    HELP = """
## Web access

The agent wants to fetch a URL or search the web. **y**/**Enter** allow once ·
**d** allow this domain from now on · **a** allow every domain (web search: every search) ·
**n** deny.
"""

    KIND = "domain-access"
    ALWAYS = True

    @property
    def host(self) -> str:
        access = self.data.get("domainAccess")
        return str(access.get("host") or access.get("url") or "") if isinstance(access, dict) else ""

    @property
    def search_query(self) -> str | None:
        search = self.data.get("webSearch")
        return str(search.get("query") or "") if isinstance(search, dict) and not self.host else None

    def render_details(self) -> Content:
        if self.search_query is not None:
            return Content.assemble("search the web for ", (self.search_query, "bold"))
        url = (self.data.get("domainAccess") or {}).get("url") or ""
        return Content.assemble("fetch ", (url or self.host, "bold"), ("  (" + self.host + ")" if url else "", "$text-muted"))

    def render_keys(self) -> str:
        ok, no, always = _keys(self, "approve"), _keys(self, "deny"), _keys(self, "always-allow")
        if self.search_query is not None:
            return f"{ok} search once · {always} allow web search in this thread · {no} deny"
        return f"{ok} allow once · d allow {self.host or 'the domain'} · {always} allow all domains · {no} deny"

    def letter(self, key: str) -> bool:
        if key == "d" and self.search_query is None:
            self.answer(DomainAccessApproveConfirm(domain_access_action="allow_domain"), f"allowed {self.host}")
            return True
        return False

    def action_approve(self) -> None:
        self.answer(DomainAccessApproveConfirm(domain_access_action="allow_once"), "allowed once")

    def action_always_allow(self) -> None:
        what = "web search allowed" if self.search_query is not None else "all domains allowed"
        self.answer(DomainAccessApproveConfirm(domain_access_action="allow_all"), what)

    def action_deny(self) -> None:
        self.answer(DomainAccessDenyConfirm(), "denied")


# --------------------------------------------------------------------------- approval-like cards


class _ApproveDenyCard(N8nCard):
    APPROVE_WORD = "approve"
    DENY_WORD = "deny"
    APPROVED = "approved"
    DENIED = "denied"

    def approve_body(self) -> ConfirmBody:
        return ApprovalConfirm(approved=True)

    def render_keys(self) -> str:
        always = f" · {_keys(self, 'always-allow')} always in this thread" if self.ALWAYS else ""
        return f"{_keys(self, 'approve')} {self.APPROVE_WORD}{always} · {_keys(self, 'deny')} {self.DENY_WORD}"

    def action_approve(self) -> None:
        self.answer(self.approve_body(), self.APPROVED)

    def action_deny(self) -> None:
        self.answer(ApprovalConfirm(approved=False), self.DENIED)

    def action_always_allow(self) -> None:
        if self.ALWAYS:
            self.answer(ApprovalConfirm(approved=True, scope="session"), "always allowed")


class ChannelConfigCard(_ApproveDenyCard):
    HELP = """
## Chat channel

The agent wants a chat channel (e.g. Slack) set up for an agent. That form lives in n8n's
web UI: set it up there, then **y**/**Enter** here to go on · **n** skip it.
"""

    KIND = "channel-config"
    APPROVE_WORD = "done"
    DENY_WORD = "skip"
    APPROVED = "done in n8n"
    DENIED = "skipped"

    def title(self) -> Content:
        cfg = self.data.get("channelConfig") or {}
        return Content.assemble(("💬 Set up the ", "bold"), (str(cfg.get("integrationType")), "bold $text-accent"),
                                (" channel", "bold"), "  ", self.confirmation.message or "")

    def render_details(self) -> Content:
        cfg = self.data.get("channelConfig") or {}
        url = thread_url(self)
        where = f"open {url} in a browser" if url else "open this thread in n8n's web UI"
        return Content(f"agent {cfg.get('agentId')}: the channel form is not available here; {where}, "
                       "then say done.")


class TargetApprovalCard(_ApproveDenyCard):
    HELP = """
## Approve a tool of another agent

**y**/**Enter** approve · **a** always allow in this thread · **n** deny.
"""

    KIND = "target-approval"
    ALWAYS = True

    def render_details(self) -> Content:
        target = self.data.get("targetApproval") or {}
        name = target.get("displayName") or target.get("toolName") or "a tool"
        return Content.assemble(("runs ", "$text-muted"), (str(name), "bold"),
                                ("  " + short_json(target.get("args"), 160) if target.get("args") else "", "$text-muted"))


class ContinueCard(_ApproveDenyCard):
    HELP = """
## Continue?

The agent paused for you (e.g. to do something in n8n first). **y**/**Enter** continue ·
**n** stop here.
"""

    KIND = "continue"
    APPROVE_WORD = "continue"
    DENY_WORD = "stop"
    APPROVED = "continued"
    DENIED = "stopped"

    def title(self) -> Content:
        return Content.assemble(("⏯ ", "bold"), self.confirmation.message or "Continue when ready")


# --------------------------------------------------------------------------- unknown


class UnknownRequestCard(N8nCard):
    """A request this client cannot answer: shown whole, answered in the browser."""

    HELP = """
## A request this client cannot answer

n8n asked something this client does not know how to answer correctly. Every field it sent
is shown; finish it in n8n's web UI at the URL shown. No key answers it here.
"""

    KIND = "unknown"

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action not in ("approve", "deny", "always_allow")

    def render_details(self) -> Content:
        parts: list[tuple[str, str] | str] = [
            ("This client cannot answer this kind of request. ", "bold $text-warning"),
        ]
        url = thread_url(self)
        parts.append(f"Finish it in the browser: {url}\n" if url else "Finish it in n8n's web UI.\n")
        fields = {"toolName": self.tool.tool_name, "args": self.tool.args, **self.data}
        for key, value in fields.items():
            if key in ("requestId", "toolCallId", "message") or value in (None, ""):
                continue
            parts.append((f"{key}: ", "$text-muted"))
            parts.append((value if isinstance(value, str) else short_json(value, 300)) + "\n")
        parts.append((f"requestId: {self.data.get('requestId')}", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        return "no key answers this here"


CARD_CLASSES: dict[str, type[N8nCard]] = {
    "credentials": CredentialsCard,
    "credential-destination": CredentialDestinationCard,
    "setup-workflow": SetupWorkflowCard,
    "mcp-connect": McpConnectCard,
    "domain-access": DomainAccessCard,
    "channel-config": ChannelConfigCard,
    "target-approval": TargetApprovalCard,
    "continue": ContinueCard,
    "unknown": UnknownRequestCard,
}
