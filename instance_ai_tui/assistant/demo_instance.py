"""A small in-memory n8n instance for the offline demo: a node catalogue, workflows, executions.

It implements ``N8nBackend`` (the same calls as the public API client) plus the node catalogue
and a simulated ``run``, so the demo's builder sub-agent has real tools to call. Writes are
checked like n8n 2.41.1's public API does (``n8n_workflow.public_api_error``: required fields,
read-only and unknown keys, node names and positions, connections), and activation needs a
trigger as there: the demo is never more lenient than the real instance.
"""

from __future__ import annotations

import asyncio
import itertools
from copy import deepcopy
from datetime import UTC, datetime
from itertools import pairwise
from typing import Any

from ..store.base import SettingsStore
from .n8n_client import N8nApiError, summarise_workflow
from .n8n_node_table import node_table
from .n8n_workflow import NodeCatalogue, NodeType, activation_error, public_api_error

#: every node type the demo model can put in a workflow (its triggers, sources and destinations,
#: ``demo.DEMO_NODE_TYPES``) is here: the demo never suggests what its own instance refuses
NODE_CATALOGUE: tuple[dict[str, str], ...] = (
    {"type": "n8n-nodes-base.scheduleTrigger", "displayName": "Schedule Trigger", "group": "trigger",
     "description": "Starts the workflow at fixed times or intervals"},
    {"type": "n8n-nodes-base.manualTrigger", "displayName": "Manual Trigger", "group": "trigger",
     "description": "Starts the workflow when you click Execute"},
    {"type": "n8n-nodes-base.webhook", "displayName": "Webhook", "group": "trigger",
     "description": "Starts the workflow when an HTTP request arrives"},
    {"type": "n8n-nodes-base.httpRequest", "displayName": "HTTP Request", "group": "transform",
     "description": "Calls any HTTP API"},
    {"type": "n8n-nodes-base.openWeatherMap", "displayName": "OpenWeatherMap", "group": "input",
     "description": "Gets current weather and forecasts"},
    {"type": "n8n-nodes-base.slack", "displayName": "Slack", "group": "output",
     "description": "Sends messages to Slack channels and users"},
    {"type": "n8n-nodes-base.gmail", "displayName": "Gmail", "group": "output",
     "description": "Sends and reads Gmail messages"},
    {"type": "n8n-nodes-base.telegram", "displayName": "Telegram", "group": "output",
     "description": "Sends Telegram messages"},
    {"type": "n8n-nodes-base.discord", "displayName": "Discord", "group": "output",
     "description": "Sends messages to Discord channels"},
    {"type": "n8n-nodes-base.microsoftTeams", "displayName": "Microsoft Teams", "group": "output",
     "description": "Sends messages to Microsoft Teams channels and chats"},
    {"type": "n8n-nodes-base.mattermost", "displayName": "Mattermost", "group": "output",
     "description": "Posts messages to Mattermost channels"},
    {"type": "n8n-nodes-base.googleSheets", "displayName": "Google Sheets", "group": "input",
     "description": "Reads and appends rows in Google Sheets"},
    {"type": "n8n-nodes-base.set", "displayName": "Edit Fields (Set)", "group": "transform",
     "description": "Adds, renames or removes fields"},
    {"type": "n8n-nodes-base.if", "displayName": "If", "group": "transform",
     "description": "Routes items by a condition"},
    {"type": "n8n-nodes-base.code", "displayName": "Code", "group": "transform",
     "description": "Runs JavaScript or Python on the items"},
    {"type": "n8n-nodes-base.rssFeedRead", "displayName": "RSS Read", "group": "input",
     "description": "Reads items of an RSS feed"},
)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


class DemoN8n:
    """A simulated n8n: safe to change.

    With a ``store`` its state is kept in the store's settings (scope ``demo``), so workflows
    the demo built are still there after a restart — a run suspended on "activate wf-104?"
    can be approved after the server restarted. Without one it lives in memory only.
    """

    label = "demo n8n (simulated)"
    SETTINGS_SCOPE = "demo"
    SETTINGS_KEY = "n8n"

    def __init__(self, store: SettingsStore | None = None) -> None:
        self._store = store
        self._workflows: dict[str, dict[str, Any]] = {}
        self._executions: dict[str, dict[str, Any]] = {}
        self._wf_ids = itertools.count(101)
        self._exec_ids = itertools.count(9001)
        self._lock = asyncio.Lock()
        self._loaded = store is None
        self._seed()

    async def _load(self) -> None:
        """Read the saved state once (the seeded state stays when nothing was saved)."""
        if self._loaded:
            return
        self._loaded = True
        assert self._store is not None
        saved = await self._store.get_setting(self.SETTINGS_SCOPE, self.SETTINGS_KEY)
        if isinstance(saved, dict) and isinstance(saved.get("workflows"), dict):
            self._workflows = saved["workflows"]
            self._executions = saved.get("executions") or {}
            self._wf_ids = itertools.count(int(saved.get("next_workflow", 101)))
            self._exec_ids = itertools.count(int(saved.get("next_execution", 9001)))

    async def _save(self) -> None:
        if self._store is None:
            return
        # peek at the counters without losing a value
        next_wf, next_exec = next(self._wf_ids), next(self._exec_ids)
        self._wf_ids, self._exec_ids = itertools.count(next_wf), itertools.count(next_exec)
        state = {"workflows": self._workflows, "executions": self._executions,
                 "next_workflow": next_wf, "next_execution": next_exec}
        await self._store.set_setting(self.SETTINGS_SCOPE, self.SETTINGS_KEY, state)

    def _seed(self) -> None:
        for name, active, nodes in (
            ("Daily sales report", True, ["n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.googleSheets", "n8n-nodes-base.gmail"]),
            ("Lead intake", True, ["n8n-nodes-base.webhook", "n8n-nodes-base.set", "n8n-nodes-base.slack"]),
            ("RSS digest", False, ["n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.rssFeedRead", "n8n-nodes-base.telegram"]),
        ):
            wf = self._make(name, [self._node(t, i) for i, t in enumerate(nodes)])
            wf["active"] = active
            self._workflows[wf["id"]] = wf

    # ----------------------------------------------------------------- helpers
    @staticmethod
    def _node(node_type: str, index: int, parameters: dict[str, Any] | None = None) -> dict[str, Any]:
        display = next((n["displayName"] for n in NODE_CATALOGUE if n["type"] == node_type), node_type.rsplit(".", 1)[-1])
        version = node_table()[node_type][0] if node_type in node_table() else 1
        return {"id": f"node-{index + 1}", "name": display, "type": node_type, "typeVersion": version,
                "position": [240 + 220 * index, 300], "parameters": parameters or {}}

    def _make(self, name: str, nodes: list[dict[str, Any]], connections: dict[str, Any] | None = None) -> dict[str, Any]:
        if connections is None:
            connections = {
                a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]} for a, b in pairwise(nodes)
            }
        stamp = _now()
        return {"id": f"wf-{next(self._wf_ids)}", "name": name, "active": False, "isArchived": False, "nodes": nodes,
                "connections": connections, "settings": {}, "createdAt": stamp, "updatedAt": stamp}

    def _get(self, workflow_id: str) -> dict[str, Any]:
        wf = self._workflows.get(str(workflow_id))
        if wf is None:
            raise N8nApiError(f"workflow {workflow_id} not found", 404)
        return wf

    # ----------------------------------------------------------------- node catalogue
    async def node_catalogue(self) -> NodeCatalogue:
        """The simulated instance knows only its small catalogue (versions as in n8n 2.41.1)."""
        types = []
        for entry in NODE_CATALOGUE:
            version, _display, trigger, versions = node_table().get(entry["type"], (1, "", False, (1,)))
            types.append(NodeType(entry["type"], version, entry["displayName"], entry["group"] == "trigger" or trigger,
                                  versions))
        return NodeCatalogue(types, source="the demo instance's node catalogue")

    async def list_nodes(self, query: str | None = None) -> list[dict[str, str]]:
        await self._load()
        words = [w for w in (query or "").lower().split() if w]
        if not words:
            return [dict(n) for n in NODE_CATALOGUE]
        hits = [n for n in NODE_CATALOGUE
                if any(w in f"{n['type']} {n['displayName']} {n['description']}".lower() for w in words)]
        return [dict(n) for n in hits]

    # ----------------------------------------------------------------- N8nBackend
    async def list_workflows(self, active: bool | None = None, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        await self._load()
        rows = [w for w in self._workflows.values()
                if (active is None or w["active"] == active) and (not name or name.lower() in w["name"].lower())]
        return [summarise_workflow(w) for w in rows[: max(1, limit)]]

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        await self._load()
        return deepcopy(self._get(workflow_id))

    async def create_workflow(self, workflow: dict[str, Any]) -> dict[str, Any]:
        await self._load()
        problem = public_api_error(workflow)
        if problem:
            raise N8nApiError(f"n8n answered 400 for new workflow: {problem}", 400)
        async with self._lock:
            wf = self._make(str(workflow["name"]), deepcopy(workflow["nodes"]), deepcopy(workflow["connections"]))
            wf["settings"] = deepcopy(workflow["settings"])
            self._workflows[wf["id"]] = wf
            await self._save()
        return deepcopy(wf)

    async def update_workflow(self, workflow_id: str, workflow: dict[str, Any]) -> dict[str, Any]:
        """A PUT as n8n's public API takes it: the whole workflow (name, nodes, connections, settings);
        like ``N8nPublicApi.update_workflow`` the given fields are laid over the current ones first."""
        await self._load()
        async with self._lock:
            wf = self._get(workflow_id)
            body = {k: deepcopy(workflow.get(k, wf.get(k))) for k in ("name", "nodes", "connections", "settings")}
            problem = public_api_error(body)
            if problem:
                raise N8nApiError(f"n8n answered 400 for workflow {workflow_id}: {problem}", 400)
            wf.update(body)
            wf["updatedAt"] = _now()
            await self._save()
            return deepcopy(wf)

    async def activate_workflow(self, workflow_id: str) -> dict[str, Any]:
        await self._load()
        async with self._lock:
            wf = self._get(workflow_id)
            problem = activation_error(wf)
            if problem:
                raise N8nApiError(f"n8n answered 400 for workflow {workflow_id}: {problem}", 400)
            wf["active"] = True
            wf["updatedAt"] = _now()
            await self._save()
            return summarise_workflow(wf)

    async def deactivate_workflow(self, workflow_id: str) -> dict[str, Any]:
        await self._load()
        async with self._lock:
            wf = self._get(workflow_id)
            wf["active"] = False
            wf["updatedAt"] = _now()
            await self._save()
            return summarise_workflow(wf)

    async def delete_workflow(self, workflow_id: str) -> dict[str, Any]:
        await self._load()
        async with self._lock:
            wf = self._get(workflow_id)
            del self._workflows[wf["id"]]
            await self._save()
            return summarise_workflow(wf)

    async def archive_workflow(self, workflow_id: str) -> dict[str, Any]:
        await self._load()
        async with self._lock:
            wf = self._get(workflow_id)
            wf["isArchived"], wf["active"] = True, False
            wf["updatedAt"] = _now()
            await self._save()
            return summarise_workflow(wf)

    async def run_workflow(self, workflow_id: str) -> dict[str, Any]:
        """Simulate one execution: every node 'runs'; a node without required setup fails."""
        await self._load()
        wf = self._get(workflow_id)
        node_results = {n["name"]: {"status": "success", "items": 1} for n in wf["nodes"]}
        execution = {"id": f"exec-{next(self._exec_ids)}", "workflowId": wf["id"], "status": "success",
                     "mode": "manual", "startedAt": _now(), "stoppedAt": _now(), "data": {"nodes": node_results}}
        self._executions[execution["id"]] = execution
        await self._save()
        return {k: v for k, v in execution.items() if k != "data"}

    async def list_executions(self, workflow_id: str | None = None, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        await self._load()
        rows = [e for e in self._executions.values()
                if (not workflow_id or e["workflowId"] == workflow_id) and (not status or e["status"] == status)]
        return [{k: v for k, v in e.items() if k != "data"} for e in rows[-max(1, limit):]]

    async def get_execution(self, execution_id: str, include_data: bool = False) -> dict[str, Any]:
        await self._load()
        execution = self._executions.get(str(execution_id))
        if execution is None:
            raise N8nApiError(f"execution {execution_id} not found", 404)
        out = deepcopy(execution)
        if not include_data:
            out.pop("data", None)
        return out

    async def aclose(self) -> None:
        return None
