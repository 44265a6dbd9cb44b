"""Python half of ``scripts/n8n-interop.sh``: prepare a fresh real n8n, then check our client against it.

``setup``  creates the owner, logs in (with a browser id, Secure cookie sent explicitly) and
           creates the workflows the scripted model will archive; prints them as JSON.
``check``  reads the JSON lines of ``instance-ai run --json --approve all`` and checks the answer,
           the read tool call and the approval round trip; then reads the thread back through
           ``N8nClient`` (history, full replay with text-blocks, resume from nextEventId).
``deny``   drives ``N8nClient`` directly through a run whose archive is denied: suspended status,
           409 while suspended, run-sync on reconnect, the denied tool result.
``gateway`` shares a folder through our ``LocalGateway``; the agent reads a file outside the
           allow-list (resource decision answered ``allowOnce``) and quotes it.

Every check prints one ``ok``/``FAIL`` line; the exit status is 1 if any failed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import uuid
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

import httpx  # noqa: E402

from instance_ai_tui.client.base import RunActiveError, StreamItem  # noqa: E402
from instance_ai_tui.client.factory import detect_dialect  # noqa: E402
from instance_ai_tui.client.n8n import N8nClient  # noqa: E402
from instance_ai_tui.client.n8n_auth import Credentials, N8nSession, login  # noqa: E402
from instance_ai_tui.protocol.api import ApprovalConfirm, ResourceDecisionConfirm  # noqa: E402
from instance_ai_tui.protocol.conversation import Conversation  # noqa: E402
from tests.support.fold import apply  # noqa: E402

FAILURES: list[str] = []


def report(ok: bool, what: str, detail: Any = "") -> bool:
    line = f"{'ok  ' if ok else 'FAIL'} {what}" + (f" ({detail})" if detail != "" else "")
    print(line, flush=True)
    if not ok:
        FAILURES.append(what)
    return ok


# --------------------------------------------------------------------------- setup


async def setup(url: str, email: str, password: str) -> int:
    from pydantic import SecretStr

    async with httpx.AsyncClient(timeout=60.0) as http:
        owner = await http.post(f"{url}/rest/owner/setup", json={
            "email": email, "firstName": "Interop", "lastName": "Owner", "password": password})
        if owner.status_code != 200:
            print(f"owner setup failed: {owner.status_code} {owner.text[:300]}", file=sys.stderr)
            return 1
        session = N8nSession(browser_id=str(uuid.uuid4()))
        await login(http, url, session, Credentials(email, SecretStr(password)))
        workflows = {}
        for key, name in (("approve", "Interop Old Workflow"), ("deny", "Interop Keep Workflow")):
            body = {
                "name": name,
                "nodes": [{"id": str(uuid.uuid4()), "name": "Manual", "type": "n8n-nodes-base.manualTrigger",
                           "typeVersion": 1, "position": [0, 0], "parameters": {}}],
                "connections": {},
                "settings": {},
                "active": False,
            }
            created = await http.post(f"{url}/rest/workflows", json=body, headers=session.headers())
            if created.status_code != 200:
                print(f"creating workflow failed: {created.status_code} {created.text[:300]}", file=sys.stderr)
                return 1
            workflows[key] = {"id": created.json()["data"]["id"], "name": name}
    print(json.dumps(workflows))
    return 0


# --------------------------------------------------------------------------- check of the CLI run


async def check(url: str, email: str, password: str, thread_id: str, jsonl: Path, workflow_id: str) -> int:
    raw_lines = [line for line in jsonl.read_text(encoding="utf-8").splitlines() if line.strip()]  # noqa: ASYNC240 - a check script
    events: list[dict[str, Any]] = []
    bad = 0
    for line in raw_lines:
        try:
            value = json.loads(line)
        except ValueError:
            bad += 1
            continue
        if isinstance(value, dict) and isinstance(value.get("type"), str):
            events.append(value)
        else:
            bad += 1
    report(bad == 0 and bool(events), "stdout of `run --json` is protocol events only, one per line",
           f"{len(events)} events, {bad} other lines")
    types = [e["type"] for e in events]
    starts = [e for e in events if e["type"] == "run-start"]
    report(len(starts) == 1, "one run-start (the approved run resumes the same run)", len(starts))
    run_id = starts[0]["runId"] if starts else ""
    report(starts and starts[0]["agentId"] == f"orchestrator-{run_id}", "orchestrator id is orchestrator-<runId>",
           starts[0]["agentId"] if starts else "")
    calls = {e["payload"]["toolCallId"]: e["payload"] for e in events if e["type"] == "tool-call"}
    results = {e["payload"]["toolCallId"]: e["payload"].get("result") for e in events if e["type"] == "tool-result"}
    listing = [c for c in calls.values() if c.get("toolName") == "workflows" and c.get("args", {}).get("action") == "list"]
    report(bool(listing) and listing[0]["toolCallId"] in results, "read tool: workflows list called and answered",
           f"{len(listing)} call(s)")
    if listing:
        listed = json.dumps(results.get(listing[0]["toolCallId"]))
        report(workflow_id in listed, "the listing contains the interop workflow", workflow_id)
    archive = [c for c in calls.values() if c.get("args", {}).get("action") == "delete"]
    requests = [e["payload"] for e in events if e["type"] == "confirmation-request"]
    report(len(archive) == 1 and archive[0].get("args", {}).get("workflowId") == workflow_id,
           "write tool: workflows delete (archive) called", archive[0].get("args") if archive else "none")
    if archive and requests:
        request = requests[0]
        report(request.get("toolCallId") == archive[0]["toolCallId"]
               and (request.get("approvalDetails") or {}).get("action") == "archive-workflow"
               and request.get("inputType") in (None, "approval"),
               "approval requested for the archive", request.get("message"))
        confirm_at, finish_at = types.index("confirmation-request"), len(types) - 1 - types[::-1].index("run-finish") \
            if "run-finish" in types else -1
        report(finish_at > confirm_at, "no run-finish before the confirmation was answered")
        result = results.get(archive[0]["toolCallId"])
        report(isinstance(result, dict) and result.get("success") is True, "archive approved and done", result)
    else:
        report(False, "approval requested for the archive", "no confirmation-request")
    text = "".join(e["payload"].get("text", "") for e in events
                   if e["type"] == "text-delta" and e.get("agentId") == f"orchestrator-{run_id}")
    report("INTEROP-DONE" in text, "the answer streamed as text deltas", text[:80])
    finishes = [e for e in events if e["type"] == "run-finish"]
    report(bool(finishes) and finishes[-1]["payload"].get("status") == "completed" and finishes[-1]["runId"] == run_id,
           "run-finish completed", finishes[-1]["payload"] if finishes else "none")

    with tempfile.TemporaryDirectory() as config:
        client = N8nClient(url, email, password, config_dir=Path(config), interactive=False)
        try:
            await client.open()
            async with httpx.AsyncClient(timeout=30.0) as http:
                workflow = await http.get(f"{url}/rest/workflows/{workflow_id}", headers=client.session.headers())
                archived = workflow.status_code == 200 and workflow.json()["data"].get("isArchived") is True
                report(archived, "n8n really archived the workflow", workflow.status_code)
                report(await detect_dialect(url) == "n8n", "detect_dialect recognises n8n (GET /rest/settings)")
                # what the client works around: the cookie is Secure and bound to the browser id
                raw = await http.post(f"{url}/rest/login", json={"emailOrLdapLoginId": email, "password": password},
                                      headers={"browser-id": client.session.browser_id})
                set_cookie = raw.headers.get("set-cookie", "")
                report("n8n-auth=" in set_cookie and "secure" in set_cookie.lower(),
                       "n8n sets the n8n-auth cookie Secure (N8N_SECURE_COOKIE left at its default)")
                jar_only = await http.get(f"{url}/rest/projects/personal",
                                          headers={"browser-id": client.session.browser_id})
                report(jar_only.status_code == 401, "over http a cookie jar does not send it back (401)",
                       jar_only.status_code)
                other_id = await http.get(f"{url}/rest/projects/personal", headers={
                    "Cookie": client.session.headers()["Cookie"], "browser-id": str(uuid.uuid4())})
                report(other_id.status_code == 401, "the cookie is refused with another browser-id (401)",
                       other_id.status_code)
            report(bool(client.model_name), "the model label for the status line", client.model_name)
            threads = await client.list_threads()
            report(any(t.id == thread_id for t in threads), "the thread is listed", f"{len(threads)} thread(s)")
            history = await client.messages(thread_id)
            roles = [m.role for m in history.messages]
            assistant = [m for m in history.messages if m.role == "assistant"]
            report(roles[:1] == ["user"] and len(assistant) == 1 and "INTEROP-DONE" in assistant[0].content,
                   "history: the user message and one assistant message with the answer", roles)
            tree = assistant[0].agent_tree if assistant else None
            names = [(c.tool_name, c.args.get("action")) for c in tree.tool_calls] if tree else []
            report(("workflows", "list") in names and ("workflows", "delete") in names,
                   "history: the agent tree holds both tool calls", names)
            status = await client.status(thread_id)
            report(not status.has_active_run and not status.is_suspended, "status: idle after the run")

            replay = Conversation(thread_id)
            items = await collect(client, thread_id, None, replay, lambda i: i.event is not None
                                  and i.event.type == "run-finish")
            kinds = [i.event.type for i in items if i.event is not None]
            report("text-block" in kinds and "text-delta" not in kinds,
                   "full replay: coalesced text-blocks, no deltas", f"{kinds.count('text-block')} text-block(s)")
            replayed = [m.content for m in replay.to_messages() if m.role == "assistant"]
            report(replayed == [assistant[0].content] if assistant else False,
                   "full replay folds to the same text as history (no duplicate text)", replayed[:1])
            ids = [i.id for i in items if i.id is not None]
            report(ids == sorted(set(ids)), "replayed ids strictly increase", f"{ids[:3]}…{ids[-2:]}")
            resumed = await collect(client, thread_id, history.next_event_id - 1, Conversation(thread_id),
                                    lambda i: True, timeout=3.0)
            report(resumed == [], "resume from nextEventId-1 repeats nothing", len(resumed))
        finally:
            await client.close()
    return 1 if FAILURES else 0


async def collect(client: N8nClient, thread_id: str, after: int | None, conversation: Conversation,
                  stop: Any, timeout: float = 30.0) -> list[StreamItem]:
    items: list[StreamItem] = []

    async def consume() -> None:
        async for item in client.events(thread_id, after=after):
            items.append(item)
            apply(conversation, item.id, item.event if item.event is not None else item.run_sync)
            if stop(item):
                return

    try:
        await asyncio.wait_for(consume(), timeout)
    except TimeoutError:
        pass
    return items


# --------------------------------------------------------------------------- denied run, driven directly


class LiveStream:
    """``client.events`` consumed in the background into a list and a ``Conversation``."""

    def __init__(self, client: N8nClient, thread_id: str) -> None:
        self.client, self.thread_id = client, thread_id
        self.items: list[StreamItem] = []
        self.conversation = Conversation(thread_id)
        self._changed = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def __aenter__(self) -> LiveStream:
        self._task = asyncio.create_task(self._consume())
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._task is not None
        self._task.cancel()
        await asyncio.gather(self._task, return_exceptions=True)

    async def _consume(self) -> None:
        async for item in self.client.events(self.thread_id):
            self.items.append(item)
            apply(self.conversation, item.id, item.event if item.event is not None else item.run_sync)
            self._changed.set()

    async def wait_for(self, kind: str, timeout: float = 120.0) -> dict[str, Any]:
        async with asyncio.timeout(timeout):
            while True:
                for item in self.items:
                    if item.event is not None and item.event.type == kind:
                        return item.event.to_wire()
                self._changed.clear()
                await self._changed.wait()

    def events(self, kind: str) -> list[dict[str, Any]]:
        return [i.event.to_wire() for i in self.items if i.event is not None and i.event.type == kind]

    def answer(self) -> list[str]:
        return [m.content for m in self.conversation.to_messages() if m.role == "assistant"]


async def deny(url: str, email: str, password: str, marker: str, workflow_id: str) -> int:
    with tempfile.TemporaryDirectory() as config:
        client = N8nClient(url, email, password, config_dir=Path(config), interactive=False)
        await client.open()
        thread_id = str(uuid.uuid4())
        try:
            async with LiveStream(client, thread_id) as live:
                run_id = await client.send(thread_id, f"{marker}: list my workflows, then archive Interop Keep Workflow")
                request = await live.wait_for("confirmation-request")
                payload = request["payload"]
                report(payload.get("args", {}).get("workflowId") == workflow_id,
                       "deny run: archive approval requested", payload.get("message"))
                await asyncio.sleep(1.0)
                report(not live.events("run-finish"), "deny run: suspended run sends no run-finish")
                status = await client.status(thread_id)
                report(status.is_suspended and not status.has_active_run and status.run_id == run_id,
                       "deny run: status isSuspended with the same runId",
                       {"isSuspended": status.is_suspended, "runId": status.run_id})
                try:
                    await client.send(thread_id, "are you still there?")
                    report(False, "deny run: a message while suspended is refused with 409")
                except RunActiveError as exc:
                    report(exc.status == 409, "deny run: a message while suspended is refused with 409", str(exc))
                cursor = max(i.id for i in live.items if i.id is not None)
                resumed = await collect(client, thread_id, cursor, Conversation(thread_id),
                                        lambda i: i.run_sync is not None, timeout=10.0)
                sync = next((i.run_sync for i in resumed if i.run_sync is not None), None)
                pending = [c for c in (sync.agent_tree.tool_calls if sync and sync.agent_tree else [])
                           if c.confirmation is not None and c.is_loading]
                report(sync is not None and sync.status == "suspended" and len(pending) == 1,
                       "deny run: reconnecting gets run-sync (suspended) with the pending confirmation",
                       sync.status if sync else "no run-sync")
                pending_ids = [p.request_id for p in live.conversation.pending_confirmations()]
                report(pending_ids == [payload["requestId"]], "deny run: the conversation shows one pending confirmation")
                answer = await client.confirm(payload["requestId"], ApprovalConfirm(approved=False))
                report(answer.ok and answer.run_id == run_id, "deny run: confirm {kind: approval, approved: false}",
                       answer.to_wire())
                finish = await live.wait_for("run-finish")
                results = [e["payload"].get("result") for e in live.events("tool-result")
                           if e["payload"]["toolCallId"] == payload["toolCallId"]]
                report(results == [{"success": False, "denied": True, "reason": "User denied the action"}],
                       "deny run: the denied call's result", results)
                text = live.answer()
                report(len(text) == 1 and "INTEROP-DENIED" in text[0], "deny run: the answer after the denial", text)
                report(finish["payload"]["status"] == "completed", "deny run: run-finish completed")
        finally:
            await client.close()
    return 1 if FAILURES else 0


# --------------------------------------------------------------------------- local gateway


GATEWAY_SECRET = "GATEWAY-FILE-CONTENT-4242"


async def gateway(url: str, email: str, password: str, marker: str) -> int:
    """Share a folder through our LocalGateway; the agent reads a file outside its allow-list,
    which needs a resource decision (answered allowOnce)."""
    with tempfile.TemporaryDirectory() as config, tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        (root / "public").mkdir()
        (root / "public" / "readme.md").write_text("public notes\n")
        (root / "notes").mkdir()
        (root / "notes" / "interop.md").write_text(f"The secret word is {GATEWAY_SECRET}.\n")
        client = N8nClient(url, email, password, config_dir=Path(config), interactive=False)
        await client.open()
        gateway_log: list[str] = []
        gw = await client.start_gateway(root, allow=["public/*"], log=gateway_log.append)
        thread_id = str(uuid.uuid4())
        try:
            async with httpx.AsyncClient(timeout=30.0) as http:
                status = (await http.get(f"{url}/rest/instance-ai/gateway/status",
                                         headers=client.session.headers())).json()["data"]
            report(status.get("connected") is True and status.get("directory") == str(root.resolve()),  # noqa: ASYNC240 - a check script
                   "gateway: paired and initialized (n8n reports it connected)", status.get("directory"))
            async with LiveStream(client, thread_id) as live:
                await client.send(thread_id, f"{marker}: read notes/interop.md on my computer")
                request = await live.wait_for("confirmation-request")
                payload = request["payload"]
                decision = payload.get("resourceDecision") or {}
                report(payload.get("inputType") == "resource-decision" and decision.get("resource") == "notes/interop.md"
                       and decision.get("options") == ["denyOnce", "allowOnce", "allowForSession"],
                       "gateway: a read outside the allow-list asks for a resource decision", payload.get("message"))
                await client.confirm(payload["requestId"], ResourceDecisionConfirm(resource_decision="allowOnce"))
                finish = await live.wait_for("run-finish")
                calls = [e["payload"]["toolName"] for e in live.events("tool-call")]
                report("read_file" in calls, "gateway: the agent called the gateway's read_file", calls)
                results = [json.dumps(e["payload"].get("result")) for e in live.events("tool-result")]
                report(any(GATEWAY_SECRET in r for r in results), "gateway: the file content came back as the result")
                text = live.answer()
                report(len(text) == 1 and "INTEROP-GATEWAY" in text[0] and GATEWAY_SECRET in text[0],
                       "gateway: the answer quotes the file", text)
                report(finish["payload"]["status"] == "completed", "gateway: run-finish completed")
            report(gw.handled >= 2, "gateway: requests answered (the retry carried _confirmation)", gw.handled)
        finally:
            await gw.stop()
            await client.close()
    return 1 if FAILURES else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("command", choices=("setup", "check", "deny", "gateway"))
    parser.add_argument("--url", required=True)
    parser.add_argument("--email", required=True)
    parser.add_argument("--password", default=os.environ.get("N8N_PASSWORD"), help="default: $N8N_PASSWORD")
    parser.add_argument("--thread")
    parser.add_argument("--jsonl", type=Path)
    parser.add_argument("--workflow-id")
    parser.add_argument("--marker")
    args = parser.parse_args()
    if not args.password:
        parser.error("give --password or set N8N_PASSWORD")
    if args.command == "setup":
        return asyncio.run(setup(args.url, args.email, args.password))
    if args.command == "check":
        return asyncio.run(check(args.url, args.email, args.password, args.thread, args.jsonl, args.workflow_id))
    if args.command == "gateway":
        return asyncio.run(gateway(args.url, args.email, args.password, args.marker))
    return asyncio.run(deny(args.url, args.email, args.password, args.marker, args.workflow_id))


if __name__ == "__main__":
    raise SystemExit(main())
