"""Every confirmation shape of n8n 2.41's Instance AI, as ``fake_n8n`` script steps.

The payloads follow api-types 1.41.0's ``confirmationRequestPayloadSchema`` (reference
``n8n-instance-ai-wire-protocol.md`` §3.3; the zod source is in the installed n8n's
``@n8n/api-types/dist/schemas/instance-ai.schema.js``), and each step accepts only the
confirm bodies n8n's tool would act on (§4, ``runtime/confirmation-payload.js``): a body of
another ``kind`` is taken the way n8n takes it (as a refusal), and recorded so a test sees it.

Usage::

    shapes = ShapeScript()
    fake = FakeN8n(script=shapes)          # "shape:<name>" messages run that shape
    ... send "shape:credentials" ...
    shapes.bodies                           # [(shape name, confirm body as received)]

``SHAPES`` names every shape; ``shape_step(name)`` gives one ``Confirm`` step.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from .fake_n8n import Confirm, Emit, Say, Step, default_script

WORKFLOW_ID = "wf_setup_1"

SHAPES: dict[str, dict[str, Any]] = {
    "credentials": {
        "toolName": "credentials",
        "args": {"action": "setup", "credentialTypes": ["slackApi", "openAiApi"]},
        "request": {
            "severity": "info",
            "message": "The workflow needs Slack and OpenAI credentials",
            "credentialRequests": [
                {
                    "credentialType": "slackApi",
                    "reason": "Post the daily report to #general",
                    "existingCredentials": [{"id": "cred_s1", "name": "Slack (team)"}, {"id": "cred_s2", "name": "Slack (me)"}],
                    "suggestedName": "Slack account",
                },
                {
                    "credentialType": "openAiApi",
                    "reason": "Summarise the report",
                    "existingCredentials": [{"id": "cred_o1", "name": "OpenAI"}],
                    "setupHint": {
                        "template": {"headers": {"Authorization": "Bearer {{apiKey}}"}},
                        "placeholders": [{"name": "apiKey", "label": "API key"}],
                        "docsUrl": "https://platform.openai.com/api-keys",
                        "serviceHost": "api.openai.com",
                    },
                },
            ],
            "requireUserSelection": True,
            "projectId": "$project",
        },
        "kinds": {"credentialSelection", "credentialAutoSetup", "approval"},
    },
    # one type with a single credential (preselected, as n8n's card does) and one with none: what
    # "n8n sets it up" (credentialAutoSetup) is for, when the instance can (browser use, a browser)
    "credentials-new": {
        "toolName": "credentials",
        "args": {"action": "setup", "credentialTypes": ["slackApi", "notionApi"]},
        "request": {
            "severity": "info",
            "message": "Select or create credentials: slackApi, notionApi",
            "credentialRequests": [
                {"credentialType": "slackApi", "reason": "Post the summary",
                 "existingCredentials": [{"id": "cred_s1", "name": "Slack (team)"}]},
                {"credentialType": "notionApi", "reason": "Read the pages", "existingCredentials": []},
            ],
            "projectId": "$project",
        },
        "kinds": {"credentialSelection", "credentialAutoSetup", "approval"},
    },
    "credential-destination": {
        "toolName": "credentials",
        "args": {"action": "setup-http", "origin": "https://api.example.com"},
        "request": {
            "severity": "warning",
            "message": "Send the API key credential to this origin?",
            "credentialDestination": {"origin": "https://api.example.com", "nodeNames": ["Fetch orders"]},
        },
        "kinds": {"credentialDestination"},
    },
    "setup-workflow": {
        "toolName": "workflows",
        "args": {"action": "setup", "workflowId": WORKFLOW_ID},
        "request": {
            "severity": "info",
            "message": "Finish setting up the workflow",
            "workflowId": WORKFLOW_ID,
            "setupRequests": [
                {
                    "node": {"name": "Schedule", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2,
                             "parameters": {}, "position": [0, 0], "id": "node-1"},
                    "isTrigger": True,
                    "isFirstTrigger": True,
                    "isTestable": True,
                    "needsAction": True,
                    "parameterIssues": {"hour": ["Parameter \"Hour\" is required."]},
                    "editableParameters": [{"name": "hour", "displayName": "Hour", "type": "number", "required": True}],
                },
                {
                    "node": {"name": "Slack", "type": "n8n-nodes-base.slack", "typeVersion": 2.3,
                             "parameters": {"channel": ""}, "position": [200, 0], "id": "node-2"},
                    "credentialType": "slackApi",
                    "existingCredentials": [{"id": "cred_s1", "name": "Slack (team)"}, {"id": "cred_s2", "name": "Slack (me)"}],
                    "isTrigger": False,
                    "needsAction": True,
                    "credentialNeedsAction": True,
                    "editableParameters": [{"name": "channel", "displayName": "Channel", "type": "string"}],
                    "parameterIssues": {"channel": ["Parameter \"Channel\" is required."]},
                },
                {
                    "node": {"name": "Log", "type": "n8n-nodes-base.noOp", "typeVersion": 1,
                             "parameters": {}, "position": [400, 0], "id": "node-3"},
                    "isTrigger": False,
                    "needsAction": True,
                },
            ],
        },
        "kinds": {"setupWorkflowApply", "setupWorkflowTestTrigger", "approval"},
    },
    "mcp-connect": {
        "toolName": "mcp",
        "args": {"action": "connect"},
        "request": {
            "severity": "info",
            "message": "Connect these servers to use their tools?",
            "mcpConnectRequest": {
                "servers": [
                    {"serverSlug": "linear", "title": "Linear", "tagline": "Issues and projects",
                     "usesCredentials": [{"credentialType": "linearApi", "name": "Linear", "value": "cred_l1"}]},
                    {"serverSlug": "notion", "title": "Notion",
                     "usesCredentials": [{"credentialType": "notionApi", "name": "Notion", "value": "cred_n1"}]},
                ]
            },
        },
        "kinds": {"mcpConnect"},
    },
    "domain-access": {
        "toolName": "research",
        "args": {"action": "fetch-url", "url": "https://docs.example.com/api"},
        "request": {
            "severity": "info",
            "message": "n8n AI wants to fetch https://docs.example.com/api",
            "domainAccess": {"url": "https://docs.example.com/api", "host": "docs.example.com"},
        },
        "kinds": {"domainAccessApprove", "domainAccessDeny"},
    },
    "web-search": {
        "toolName": "research",
        "args": {"action": "web-search", "query": "n8n slack node"},
        "request": {"severity": "info", "message": "n8n AI wants to search the web for: n8n slack node",
                    "webSearch": {"query": "n8n slack node"}},
        "kinds": {"domainAccessApprove", "domainAccessDeny"},
    },
    "channel-config": {
        "toolName": "agents",
        "args": {"action": "configure-channel"},
        # n8n 2.41's message (agents module, configure-channel.tool.js)
        "request": {"severity": "info", "message": "Set up the slack channel",
                    "channelConfig": {"integrationType": "slack", "agentId": "agent_42"}},
        "kinds": {"approval"},
    },
    "target-approval": {
        "toolName": "build-agent",
        "args": {"task": "update the agent"},
        "request": {"severity": "warning", "message": "The agent builder wants to run a tool",
                    "targetApproval": {"toolName": "update-agent-config", "displayName": "Update agent config",
                                       "args": {"agentId": "agent_42", "model": "gpt-4o"}}},
        "kinds": {"approval"},
    },
    "delete-credential": {
        "toolName": "credentials",
        "args": {"action": "delete", "credentialId": "cred_s1", "credentialName": "Slack account"},
        # as n8n 2.41's credentials tool suspends for a delete (``severity: 'destructive'``)
        "request": {"severity": "destructive", "message": "Delete Slack account"},
        "kinds": {"approval"},
    },
    "text": {
        "toolName": "ask-user",
        "args": {},
        "request": {"severity": "info", "message": "What should the workflow be called?", "inputType": "text"},
        "kinds": {"approval"},
    },
    "continue": {
        "toolName": "pause-for-user",
        "args": {},
        "request": {"severity": "info", "message": "Open the credential in n8n, then continue", "inputType": "continue"},
        "kinds": {"approval"},
    },
    "unknown": {
        "toolName": "future-tool",
        "args": {"action": "x"},
        "request": {"severity": "info", "message": "A newer n8n asks something",
                    "preferenceCard": {"preferenceId": "p1", "options": ["keep", "drop"]}},
        "kinds": set(),
    },
}


def _result(name: str, body: dict[str, Any]) -> Any:
    """What n8n's tool answers for ``body`` (the tool result the fake publishes)."""
    kind = body.get("kind")
    if kind not in SHAPES[name]["kinds"]:
        return {"success": False, "denied": True, "reason": f"{kind} does not answer {name}"}
    approved = body.get("approved", True)
    if approved is False or kind == "domainAccessDeny":
        return {"success": False, "denied": True, "reason": "User denied the action"}
    return {"success": True, "answer": {k: v for k, v in body.items() if k != "kind"}, "kind": kind}


def shape_step(name: str, tool_call_id: str | None = None, record: Callable[[str, dict[str, Any]], None] | None = None,
               project_id: str = "") -> Confirm:
    """One ``Confirm`` step of shape ``name`` (a key of ``SHAPES``)."""
    shape = SHAPES[name]
    request = {k: (project_id if v == "$project" else v) for k, v in shape["request"].items()}

    def answer(body: dict[str, Any]) -> tuple[Any, list[Step]]:
        if record is not None:
            record(name, body)
        result = _result(name, body)
        said = "Done." if result.get("success") else "OK, I did not do that."
        return result, [Say(said, f"resp-{name}-after")]

    return Confirm(tool_call_id or f"call_{name.replace('-', '_')}", shape["toolName"], dict(shape["args"]), request, answer)


class ShapeScript:
    """A ``FakeN8n`` script: ``shape:<name>`` runs that shape; anything else the default."""

    def __init__(self, fallback: Callable[[str], list[Step]] = default_script) -> None:
        self.bodies: list[tuple[str, dict[str, Any]]] = []
        self.fallback = fallback
        self.project_id = ""

    def record(self, name: str, body: dict[str, Any]) -> None:
        self.bodies.append((name, body))

    #: set by ``main``: lets ``shape:background`` start a background task in the live thread
    fake: Any = None

    def _extras(self, name: str) -> list[Step] | None:
        """The other things n8n shows beside the conversation, for trying them by hand."""
        if name == "quota":
            return [Emit("error", {"content": "You have used all your AI credits this month.", "code": "quota_exhausted"})]
        if name == "setup-items":
            items = [{"id": "s1", "kind": "credential", "credentialType": "slackApi", "appDisplayName": "Slack",
                      "nodeBindings": [{"nodeName": "Slack"}]},
                     {"id": "s2", "kind": "parameters", "nodeName": "Schedule", "parameterNames": ["hour"]}]
            return [Say("Built it; it still needs setting up.", "resp-setup"),
                    Emit("setup-items", {"workflowId": WORKFLOW_ID, "items": items})]
        if name == "archived" and self.fake is not None:
            self.fake.archived_on_finish = ["wf_old_1", "wf_old_2"]
            return [Say("Archived the two old workflows.", "resp-archived")]
        if name == "background" and self.fake is not None:
            fake = self.fake

            def start() -> None:
                for thread_id, thread in list(fake._threads.items()):
                    if thread.groups and thread.run is None:
                        fake.start_background_task(thread_id, "workflow-builder")
                        return

            asyncio.get_running_loop().call_later(0.5, start)
            return [Say("A builder keeps working in the background.", "resp-bg")]
        return None

    def __call__(self, message: str) -> list[Step]:
        text = message.strip()
        extra = self._extras(text[6:]) if text.startswith("shape:") else None
        if extra is not None:
            return extra
        if text.startswith("shape:") and text[6:] in SHAPES:
            name = text[6:]
            return [Say(f"I need something from you ({name}).", f"resp-{name}"),
                    shape_step(name, record=self.record, project_id=self.project_id)]
        return self.fallback(message)


def main(argv: list[str] | None = None) -> int:
    """``python -m tests.support.n8n_shapes --port N``: the fake n8n with every shape
    (send ``shape:<name>``; names: see ``SHAPES``) for trying the cards by hand."""
    import argparse

    from .fake_n8n import FakeN8n, serve_forever

    parser = argparse.ArgumentParser(description="Serve the fake n8n with every confirmation shape on 127.0.0.1.")
    parser.add_argument("--port", type=int, default=5678)
    args = parser.parse_args(argv)

    script = ShapeScript()

    def started(fake: FakeN8n) -> str:
        script.project_id = fake.project_id
        script.fake = fake
        return "; send shape:<name>, names: " + ", ".join(SHAPES)

    return serve_forever(FakeN8n(script=script, step_delay=0.05), args.port, after_start=started)


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
