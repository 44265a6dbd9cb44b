"""Cards for the confirmation shapes of n8n's Instance AI (api-types 1.41 / n8n 2.41).

``build_n8n_card`` picks the card for a confirmation from its fields (reference
``n8n-instance-ai-wire-protocol.md`` §3.3) and ``card_factory.build_card`` asks it first;
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
it appears), takes keys only once the person went to it (``tui.cards``), asks for a second key
before a grant that lasts (``ConfirmCard.ask_always``: "d"/"a" then Enter) and answers through
``ConfirmCard.answer``. The card is built from the
confirmation alone, so a card restored from history looks the same as the live one.
"""

from __future__ import annotations

from typing import Any

from textual.content import Content

from ...protocol.api import (
    ApprovalConfirm,
    ConfirmBody,
    CredentialAutoSetupConfirm,
    CredentialDestinationConfirm,
    CredentialSelectionConfirm,
    DomainAccessApproveConfirm,
    DomainAccessDenyConfirm,
    McpConnectConfirm,
)
from ...protocol.tree import Confirmation, ToolCallState
from ..themes.glyphs import SEVERITY
from .confirmations import ConfirmCard, short_json
from .n8n_card_base import (
    KNOWN_FIELDS,
    KNOWN_INPUT_TYPES,
    N8nCard,
    _existing,
    _keys,
    _origin,
    card_kind,
    thread_url,
    wire,
)
from .n8n_setup_card import SetupWorkflowCard, _typed

__all__ = [
    "CARD_CLASSES", "KNOWN_FIELDS", "KNOWN_INPUT_TYPES", "N8nCard", "SetupWorkflowCard", "_typed", "build_n8n_card",
    "card_kind", "thread_url", "wire",
]


# --------------------------------------------------------------------------- credentials


class CredentialsCard(N8nCard):
    HELP = """
## Credentials

n8n needs a credential per type. **1–9** pick one of your credentials for the selected type
(**↑**/**↓** select the type) · **s** let n8n set up a new one for the selected type (offered
only when the instance can: browser use on and a browser connected, and no credential of that
type yet) · **y**/**Enter** use the picked credentials (a type left without one: Enter again) ·
**n** skip.
"""

    KIND = "credentials"

    def __init__(self, tool: ToolCallState, confirmation: Confirmation) -> None:
        super().__init__(tool, confirmation)
        self.requests: list[dict[str, Any]] = [r for r in self.data.get("credentialRequests") or [] if isinstance(r, dict)]
        self.cursor = 0
        self.chosen: dict[str, str] = {}
        #: Enter was pressed once with a type left without a credential (the second Enter sends)
        self._partial_asked = False
        must_pick = bool(self.data.get("requireUserSelection"))
        for req in self.requests:
            existing = _existing(req)
            # as n8n's card (InstanceAiCredentialSetup.vue): preselected only when it is the only one
            if len(existing) == 1 and not must_pick and not req.get("preferNew"):
                self.chosen[str(req.get("credentialType"))] = existing[0][0]

    def on_mount(self) -> None:
        super().on_mount()
        client = _client(self)
        if hasattr(client, "read_capabilities") and not self.answered:
            # what the instance can do may have changed since login (a browser connected): read it again
            self.run_worker(self._read_capabilities(client), group="capabilities")

    async def _read_capabilities(self, client: Any) -> None:
        await client.read_capabilities()  # never raises: an unreadable part stays unknown
        if self.is_attached and not self.answered:
            self.refresh_card()

    def auto_setup_refusal(self, req: dict[str, Any]) -> str:
        """Why "n8n sets it up" cannot be offered for ``req`` now ("" when it can)."""
        if _existing(req):
            return "you have credentials of this type: pick one (1–9)"
        capabilities = getattr(_client(self), "capabilities", None)
        if capabilities is None:
            return "this client does not know whether the instance can set up credentials"
        if not capabilities.credential_auto_setup:
            return f"n8n cannot set it up: {capabilities.why_no_auto_setup()}"
        ctype = str(req.get("credentialType"))
        others = [t for t in self.chosen if t != ctype]
        if others:
            # n8n's answer carries one type to set up and nothing else: the picks would be lost
            return (f"n8n sets up one credential per answer and your pick for {', '.join(others)} would be "
                    f"lost: Enter uses your picks first (n8n then asks again for {ctype})")
        return ""

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
                    if not self.auto_setup_refusal(req):
                        parts.append(("    you have no credential of this type: s lets n8n set one up\n", "$text-muted"))
                    else:
                        where = _credentials_url(self)
                        parts.append((f"    you have no credential of this type: create one in n8n"
                                      f"{' (' + where + ')' if where else ''}, then ask again, or skip\n", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        ok = _keys(self, "approve")
        req = self.requests[self.cursor] if self.requests else None
        setup = " · s n8n sets it up" if req is not None and not self.auto_setup_refusal(req) else ""
        return f"1–9 pick · ↑/↓ type{setup} · {ok} use these · {_keys(self, 'deny')} skip"

    def letter(self, key: str) -> bool:
        if not self.requests:
            return False
        req = self.requests[self.cursor]
        if key.isdigit() and key != "0":
            existing = _existing(req)
            n = int(key)
            if n <= len(existing):
                self.chosen[str(req.get("credentialType"))] = existing[n - 1][0]
                self._partial_asked = False
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
            refusal = self.auto_setup_refusal(req)
            if refusal:
                if not self.in_grace and not self.answered:
                    self.notify(refusal[:1].upper() + refusal[1:] + ".", severity="warning")
                return True
            ctype = str(req.get("credentialType"))
            self.answer(CredentialAutoSetupConfirm(credential_type=ctype), f"n8n sets up a {ctype} credential")
            return True
        return False

    def action_approve(self) -> None:
        missing = [str(r.get("credentialType")) for r in self.requests if str(r.get("credentialType")) not in self.chosen]
        if not self.chosen:
            if not self.in_grace and not self.answered:
                how = "1–9" + (", or s to let n8n set it up" if any(
                    not self.auto_setup_refusal(r) for r in self.requests) else "")
                self.notify(f"Pick a credential for {', '.join(missing)} ({how}); n skips.", severity="warning")
            return
        if missing and not self._partial_asked:
            # n8n's card lets a person continue with some types left open; say so before it goes
            if not self.in_grace and not self.answered:
                self._partial_asked = True
                self.notify(f"No credential picked for {', '.join(missing)}: {_keys(self, 'approve')} again "
                            "continues without it (n8n may ask again), or pick one (1–9).", severity="warning")
            return
        names = ", ".join(f"{t}: {_cred_name(self.requests, t, i)}" for t, i in self.chosen.items())
        left = f"; none for {', '.join(missing)}" if missing else ""
        self.answer(CredentialSelectionConfirm(credentials=dict(self.chosen)), f"using {names}{left}")

    def action_deny(self) -> None:
        self.answer(ApprovalConfirm(approved=False), "skipped")


def _client(card: ConfirmCard) -> Any:
    """The app's client (for what the instance can do), or None before the card is on screen."""
    try:
        return getattr(card.app, "client", None)
    except Exception:  # noqa: BLE001 - no active app yet
        return None


def _credentials_url(card: ConfirmCard) -> str | None:
    base = getattr(_client(card), "base_url", None)
    return f"{base.rstrip('/')}/home/credentials" if isinstance(base, str) and base else None


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


# --------------------------------------------------------------------------- MCP


class McpConnectCard(N8nCard):
    HELP = """
## Connect MCP servers

Connecting a server is a sign-in to its service, done in n8n's web UI (the URL shown): connect
the ones you want there, then here **1–9** tick them · **y**/**Enter** done (n8n checks which are
connected and tells its agent) · **n** not now.
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
        url = thread_url(self)
        where = f"open {url} in a browser" if url else "open this thread in n8n's web UI"
        parts.append((f"Connecting signs in to the service: {where}, connect them there, then tick them here "
                      "and say done (n8n checks which are connected).", "$text-muted"))
        return Content.assemble(*parts)

    def render_keys(self) -> str:
        return (f"1–{min(len(self.servers), 9)} tick · {_keys(self, 'approve')} done, connected in n8n · "
                f"{_keys(self, 'deny')} not now")

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
        self.answer(McpConnectConfirm(approved=True, connected_slugs=order), f"connected in n8n: {', '.join(order)}")

    def action_deny(self) -> None:
        self.answer(McpConnectConfirm(approved=False), "not connected")


# --------------------------------------------------------------------------- domains and web search


class DomainAccessCard(N8nCard):
    HELP = """
## Web access

The agent wants to fetch a URL or search the web. **y**/**Enter** allow once ·
**d** then **Enter** allow this domain from now on · **a** then **Enter** allow every domain
(web search: every search) · **n** deny. A grant that lasts takes two keys: the first says
what it grants.
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
            return f"{ok} search once · {always} allow web search in this thread… · {no} deny"
        return f"{ok} allow once · d allow {self.host or 'the domain'}… · {always} allow all domains… · {no} deny"

    def letter(self, key: str) -> bool:
        if key == "d" and self.search_query is None:
            self.ask_always(f"the agent fetches from {self.host or 'this domain'} without asking, from now on.",
                            DomainAccessApproveConfirm(domain_access_action="allow_domain"), f"allowed {self.host}")
            return True
        return False

    def action_approve(self) -> None:
        self.answer(DomainAccessApproveConfirm(domain_access_action="allow_once"), "allowed once")

    def action_always_allow(self) -> None:
        if self.search_query is not None:
            what, grant = "web search allowed", "the agent searches the web without asking, for the rest of this thread."
        else:
            what, grant = "all domains allowed", "the agent fetches from every domain without asking, from now on."
        self.ask_always(grant, DomainAccessApproveConfirm(domain_access_action="allow_all"), what)

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
        always = f" · {_keys(self, 'always-allow')} always in this thread…" if self.offers_always else ""
        return f"{_keys(self, 'approve')} {self.APPROVE_WORD}{always} · {_keys(self, 'deny')} {self.DENY_WORD}"

    def action_approve(self) -> None:
        self.answer(self.approve_body(), self.APPROVED)

    def action_deny(self) -> None:
        self.answer(ApprovalConfirm(approved=False), self.DENIED)

    def action_always_allow(self) -> None:
        if self.offers_always:
            self.ask_always(f"“{self.tool.tool_name}” runs without asking, for the rest of this thread.",
                            ApprovalConfirm(approved=True, scope="session"), "always allowed")


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
        kind = str(cfg.get("integrationType"))
        said = (self.confirmation.message or "").strip()
        # n8n 2.41's message is "Set up the KIND channel" itself (configure-channel.tool): not said twice
        extra = "" if said.lower().rstrip(".") == f"set up the {kind} channel".lower() else said
        return Content.assemble(("💬 Set up the ", "bold"), (kind, "bold $text-accent"),
                                (" channel", "bold"), "  " if extra else "", extra)

    def render_details(self) -> Content:
        cfg = self.data.get("channelConfig") or {}
        url = thread_url(self)
        where = f"open {url} in a browser" if url else "open this thread in n8n's web UI"
        return Content(f"agent {cfg.get('agentId')}: the channel form is not available here; {where}, "
                       "then say done.")


class TargetApprovalCard(_ApproveDenyCard):
    HELP = """
## Approve a tool of another agent

**y**/**Enter** approve · **n** deny. Each call asks: a tool of another agent is never
always allowed from here (n8n's own card offers no "always" for it either).
"""

    KIND = "target-approval"
    #: n8n 2.41.1's words when the suspension carries none (``stream/map-chunk.js``): its build-agent approvals
    GENERIC_MESSAGE = "Confirmation required"

    def _target_name(self) -> str:
        target = self.data.get("targetApproval") or {}
        return str(target.get("displayName") or target.get("toolName") or "a tool")

    def title(self) -> Content:
        said = (self.confirmation.message or "").strip()
        if said and said != self.GENERIC_MESSAGE:
            return super().title()
        # n8n says only "Confirmation required": say who asks (the agent the Agent Builder test-runs) and what
        mark = SEVERITY.get(self.confirmation.severity, SEVERITY["warning"])
        return Content.assemble((f"{mark.glyph} {mark.label.upper()}", f"bold ${mark.variable}"), "  ",
                                "The agent under test wants to run ", (self._target_name(), "bold"))

    def render_details(self) -> Content:
        target = self.data.get("targetApproval") or {}
        return Content.assemble(("runs ", "$text-muted"), (self._target_name(), "bold"),
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
        if action in ("approve", "deny", "always_allow"):
            return False
        return super().check_action(action, parameters)

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

def build_n8n_card(tool: ToolCallState, confirmation: Confirmation) -> ConfirmCard | None:
    kind = card_kind(confirmation)
    if kind is None:
        return None
    return CARD_CLASSES[kind](tool, confirmation)
