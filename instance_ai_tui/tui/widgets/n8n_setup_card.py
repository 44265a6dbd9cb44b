"""The workflow-setup card of n8n's Instance AI: credentials and parameters per node, test trigger, apply."""

from __future__ import annotations

from typing import Any

from textual import on
from textual.app import ComposeResult
from textual.content import Content
from textual.widgets import Input

from ...protocol.api import (
    ApprovalConfirm,
    SetupWorkflowApplyConfirm,
    SetupWorkflowTestTriggerConfirm,
)
from ...protocol.tree import Confirmation, ToolCallState
from .confirmations import short_json
from .n8n_card_base import N8nCard, _existing, _keys

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
        # the workflow's name (added by the n8n client: n8n's request names it only by id), else its id
        name = self.data.get("workflowName")
        shown = f"{name} ({self.data.get('workflowId')})" if isinstance(name, str) and name else str(self.data.get("workflowId"))
        return Content.assemble(("⚙ Set up workflow ", "bold"), (shown, "$text-accent"), "  ",
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


