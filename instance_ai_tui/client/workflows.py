"""Reading a workflow and its last execution, for the canvas, from whatever a client is connected to.

``workflow_source(client)`` gives a ``WorkflowSource`` or ``None``:

- the embedded client: the n8n its assistant's tools use — the public API (``N8N_URL``/``N8N_API_KEY``,
  with the editor's URL known) or the demo's simulated instance;
- n8n by URL (``N8nClient``): n8n's own REST with the logged-in session (``GET /rest/workflows/:id``,
  ``GET /rest/executions?filter=``, ``GET /rest/executions/:id``, whose ``data`` is ``flatted`` text);
- our own server (``RemoteClient``): ``None``; it serves conversations, not workflows.

Every answer is a bounded JSON document (``MAX_BYTES``) handed to ``protocol.workflow_graph``, which
parses it defensively. Failures are ``ClientError`` with the part and the next step in its words.
"""

from __future__ import annotations

import json
from typing import Any, Protocol

from .base import Client, ClientError

#: a workflow or execution document larger than this is refused (a 200-node workflow is ~300 kB)
MAX_BYTES = 8_000_000


class WorkflowSource(Protocol):
    #: what the source is, for the canvas's title ("n8n at http://...", "demo n8n (simulated)")
    label: str

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]: ...

    async def last_execution(self, workflow_id: str) -> dict[str, Any] | None:
        """The newest execution of the workflow with its node data, or ``None`` when it never ran."""
        ...

    async def executions(self, workflow_id: str, limit: int = 20) -> list[dict[str, Any]]:
        """The workflow's recent executions, newest first (id, status, startedAt; no node data)."""
        ...

    async def execution(self, execution_id: str) -> dict[str, Any]:
        """One execution with its node data."""
        ...

    def editor_url(self, workflow_id: str) -> str | None:
        """The workflow in n8n's editor (``None``: no editor, e.g. the demo)."""
        ...

    async def list_workflows(self) -> list[dict[str, Any]]:
        """Id and name of the workflows (newest first where the source says)."""
        ...


def _bounded(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ClientError(f"n8n sent {what} that is not a JSON object")
    try:
        size = len(json.dumps(value, default=str))
    except (TypeError, ValueError):
        raise ClientError(f"n8n sent {what} that cannot be read as JSON") from None
    if size > MAX_BYTES:
        raise ClientError(f"n8n sent {what} of {size // 1_000_000} MB; the canvas reads at most "
                          f"{MAX_BYTES // 1_000_000} MB")
    return value


class BackendSource:
    """The n8n tools' backend of the embedded assistant (``N8nBackend``: public API or demo)."""

    def __init__(self, backend: Any) -> None:
        self._backend = backend
        self.label = str(getattr(backend, "label", "n8n"))
        base = getattr(backend, "base", None)
        self._editor = base.removesuffix("/api/v1") if isinstance(base, str) else None

    async def _call(self, awaitable: Any, what: str) -> Any:
        try:
            return await awaitable
        except ClientError:
            raise
        except Exception as exc:  # the backend's N8nApiError (assistant layer) carries its message
            message = getattr(exc, "message", None)
            if not isinstance(message, str):
                raise
            raise ClientError(f"{self.label}: {message} ({what})", getattr(exc, "status", None)) from None

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        return _bounded(await self._call(self._backend.get_workflow(workflow_id), "reading the workflow"),
                        "a workflow")

    async def last_execution(self, workflow_id: str) -> dict[str, Any] | None:
        rows = await self.executions(workflow_id, limit=1)
        return await self.execution(str(rows[0]["id"])) if rows else None

    async def executions(self, workflow_id: str, limit: int = 20) -> list[dict[str, Any]]:
        rows = await self._call(self._backend.list_executions(workflow_id=workflow_id, limit=limit),
                                "listing executions")
        return newest_first(rows)

    async def execution(self, execution_id: str) -> dict[str, Any]:
        return _bounded(await self._call(self._backend.get_execution(str(execution_id), include_data=True),
                                         "reading the execution"), "an execution")

    def editor_url(self, workflow_id: str) -> str | None:
        return f"{self._editor}/workflow/{workflow_id}" if self._editor else None

    async def list_workflows(self) -> list[dict[str, Any]]:
        rows = await self._call(self._backend.list_workflows(limit=250), "listing workflows")
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


class N8nRestSource:
    """n8n's own REST through an ``N8nClient``'s logged-in session."""

    def __init__(self, client: Any) -> None:
        self._client = client
        self.label = f"n8n at {client.base_url}"

    async def _get(self, path: str, params: dict[str, str] | None = None) -> Any:
        await self._client.open()
        return await self._client._request("GET", path, params=params)

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        return _bounded(await self._get(f"/rest/workflows/{_segment(workflow_id)}"), "a workflow")

    async def last_execution(self, workflow_id: str) -> dict[str, Any] | None:
        rows = await self.executions(workflow_id, limit=1)
        return await self.execution(str(rows[0]["id"])) if rows else None

    async def executions(self, workflow_id: str, limit: int = 20) -> list[dict[str, Any]]:
        listing = await self._get("/rest/executions", {"filter": json.dumps({"workflowId": workflow_id}),
                                                       "limit": str(max(1, min(limit, 100)))})
        if isinstance(listing, dict) and isinstance(listing.get("data"), dict):
            listing = listing["data"]
        rows = listing.get("results") if isinstance(listing, dict) else listing
        return newest_first(rows)

    async def execution(self, execution_id: str) -> dict[str, Any]:
        return _bounded(await self._get(f"/rest/executions/{_segment(str(execution_id))}"), "an execution")

    def editor_url(self, workflow_id: str) -> str | None:
        return f"{self._client.base_url}/workflow/{workflow_id}"

    async def list_workflows(self) -> list[dict[str, Any]]:
        listing = await self._get("/rest/workflows", {"take": "250"})
        rows = listing.get("data") if isinstance(listing, dict) and "data" in listing else listing
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []


def newest_first(rows: Any) -> list[dict[str, Any]]:
    """Execution rows (with an id) newest first: by start time, then by id."""
    valid = [r for r in rows if isinstance(r, dict) and r.get("id") is not None] if isinstance(rows, list) else []
    def key(row: dict[str, Any]) -> tuple[str, int, str]:
        ident = str(row.get("id"))
        return (str(row.get("startedAt") or ""), int(ident) if ident.isdigit() else 0, ident)
    return sorted(valid, key=key, reverse=True)


def _segment(value: str) -> str:
    text = str(value).strip()
    if not text or "/" in text or "?" in text or "#" in text or text in (".", ".."):
        raise ClientError(f"invalid workflow or execution id {value!r}")
    return text


def workflow_source(client: Client) -> WorkflowSource | None:
    """Where ``client`` can read workflows from (``None``: it cannot)."""
    if client.mode == "n8n":
        return N8nRestSource(client)
    if client.mode == "embedded":
        try:
            service = getattr(client, "service", None)
        except ClientError:  # not open yet
            return None
        backend = getattr(service, "n8n", None) if service is not None else None
        return BackendSource(backend) if backend is not None else None
    return None
