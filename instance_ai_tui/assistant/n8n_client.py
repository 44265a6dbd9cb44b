"""A small async client of the n8n public REST API (``/api/v1``), authenticated by ``X-N8N-API-KEY``.

The key is held as a ``SecretStr`` and only ever put in the request header: it is not part of
any error message, log line or repr. Failures become ``N8nApiError`` with a message a user can
act on (wrong key, unknown workflow, unreachable host, ...).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from pydantic import SecretStr

from .n8n_workflow import NodeCatalogue

if TYPE_CHECKING:  # httpx loads with the first ``N8nPublicApi``: the assistant's start without n8n skips it
    import httpx


class N8nApiError(Exception):
    """An n8n API call failed; ``message`` is meant for the agent and the user."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


@runtime_checkable
class N8nBackend(Protocol):
    """What the n8n tools need: the real public API or the in-memory demo instance."""

    label: str

    async def list_workflows(self, active: bool | None = None, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]: ...
    async def get_workflow(self, workflow_id: str) -> dict[str, Any]: ...
    async def create_workflow(self, workflow: dict[str, Any]) -> dict[str, Any]: ...
    async def update_workflow(self, workflow_id: str, workflow: dict[str, Any]) -> dict[str, Any]: ...
    async def activate_workflow(self, workflow_id: str) -> dict[str, Any]: ...
    async def deactivate_workflow(self, workflow_id: str) -> dict[str, Any]: ...
    async def delete_workflow(self, workflow_id: str) -> dict[str, Any]: ...
    async def archive_workflow(self, workflow_id: str) -> dict[str, Any]: ...
    async def node_catalogue(self) -> NodeCatalogue: ...
    async def list_executions(self, workflow_id: str | None = None, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]: ...
    async def get_execution(self, execution_id: str, include_data: bool = False) -> dict[str, Any]: ...
    async def aclose(self) -> None: ...


def split_credentials(url: str) -> tuple[str, tuple[str, str] | None]:
    """``http://user:pass@host`` -> (``http://host``, (user, pass)); a URL without them is unchanged.

    A password inside ``N8N_URL`` must not reach logs (httpx logs request URLs) or the model
    (the tools describe the instance by its URL): it travels as HTTP basic auth instead."""
    from urllib.parse import unquote, urlsplit, urlunsplit

    parts = urlsplit(url.strip())
    if "@" not in parts.netloc:
        return url, None
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    try:
        port = parts.port
    except ValueError:
        port = None
    netloc = host + (f":{port}" if port else "")
    return urlunsplit(parts._replace(netloc=netloc)), (unquote(parts.username or ""), unquote(parts.password or ""))


def api_base(url: str) -> str:
    """``http://host:5678`` or ``http://host:5678/api/v1`` -> ``http://host:5678/api/v1`` (credentials removed)."""
    base = split_credentials(url)[0].strip().rstrip("/")
    if not base.startswith(("http://", "https://")):
        raise ValueError(f"N8N_URL must start with http:// or https:// (got {base!r})")
    return base if base.endswith("/api/v1") else f"{base}/api/v1"


#: fields the public API accepts when creating/updating a workflow (others are refused by n8n)
_WORKFLOW_WRITE_FIELDS = ("name", "description", "nodes", "connections", "settings", "staticData")


def workflow_body(workflow: dict[str, Any]) -> dict[str, Any]:
    """Only what the public API accepts: read-only fields (``id``, ``active``, ``versionId``, ...) are
    a 400 there, as are ``null`` values of the optional ones (as GET returns them)."""
    body = {k: workflow[k] for k in _WORKFLOW_WRITE_FIELDS if workflow.get(k) is not None}
    body.setdefault("nodes", [])
    body.setdefault("connections", {})
    body.setdefault("settings", {})
    return body


class N8nPublicApi:
    """The n8n public API over httpx."""

    def __init__(
        self,
        url: str,
        api_key: SecretStr | str,
        *,
        timeout: float = 20.0,
        transport: httpx.AsyncBaseTransport | None = None,
        catalogue: NodeCatalogue | None = None,
    ) -> None:
        self.base = api_base(url)
        self.label = f"n8n at {self.base.removesuffix('/api/v1')}"
        key = api_key.get_secret_value() if isinstance(api_key, SecretStr) else api_key
        if not key:
            raise ValueError("N8N_API_KEY is empty")
        credentials = split_credentials(url)[1]
        import httpx

        self._http = httpx.AsyncClient(
            base_url=self.base,
            auth=httpx.BasicAuth(*credentials) if credentials else None,
            headers={"X-N8N-API-KEY": key, "Accept": "application/json"},
            timeout=timeout,
            transport=transport,
        )
        self._catalogue = catalogue

    def __repr__(self) -> str:
        return f"N8nPublicApi({self.base!r})"

    async def aclose(self) -> None:
        await self._http.aclose()

    async def _call(self, method: str, path: str, *, what: str, **kwargs: Any) -> Any:
        import httpx  # (imported by ``__init__``)

        try:
            response = await self._http.request(method, path, **kwargs)
        except httpx.TimeoutException:
            raise N8nApiError(f"n8n did not answer in time ({method} {path})") from None
        except httpx.HTTPError as exc:
            raise N8nApiError(f"cannot reach n8n at {self.base}: {type(exc).__name__}") from None
        if response.status_code in (401, 403):
            raise N8nApiError("n8n refused the API key; check N8N_API_KEY", response.status_code)
        if response.status_code == 404:
            raise N8nApiError(f"{what} not found", 404)
        if response.status_code >= 400:
            detail = _error_detail(response)
            raise N8nApiError(f"n8n answered {response.status_code} for {what}: {detail}", response.status_code)
        if not response.content:
            return {}
        try:
            return response.json()
        except ValueError:
            raise N8nApiError(f"n8n sent a response that is not JSON for {what}", response.status_code) from None

    # ----------------------------------------------------------------- node types
    async def node_catalogue(self) -> NodeCatalogue:
        """The instance's node types: its ``/types/nodes.json`` when the key may read it (n8n 2.41 serves
        it to logged-in users only: 401 for an API key), else the built-in table of n8n 2.41.1."""
        if self._catalogue is None:
            import httpx  # (imported by ``__init__``)

            root = self.base.removesuffix("/api/v1")
            catalogue = NodeCatalogue.built_in()
            try:
                response = await self._http.get(f"{root}/types/nodes.json")
                if response.status_code == 200:
                    catalogue = NodeCatalogue.from_nodes_json(response.json())
            except (httpx.HTTPError, ValueError):
                pass
            self._catalogue = catalogue
        return self._catalogue

    # ----------------------------------------------------------------- workflows
    async def list_workflows(self, active: bool | None = None, name: str | None = None, limit: int = 50) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": max(1, min(limit, 250))}
        if active is not None:
            params["active"] = "true" if active else "false"
        if name:
            params["name"] = name
        data = await self._call("GET", "/workflows", what="workflows", params=params)
        return [summarise_workflow(w) for w in _data_list(data)]

    async def get_workflow(self, workflow_id: str) -> dict[str, Any]:
        return await self._call("GET", f"/workflows/{_seg(workflow_id)}", what=f"workflow {workflow_id}")

    async def create_workflow(self, workflow: dict[str, Any]) -> dict[str, Any]:
        if not workflow.get("name"):
            raise N8nApiError("a workflow needs a name")
        return await self._call("POST", "/workflows", what="new workflow", json=workflow_body(workflow))

    async def update_workflow(self, workflow_id: str, workflow: dict[str, Any]) -> dict[str, Any]:
        current = await self.get_workflow(workflow_id)
        merged = {**current, **workflow}
        return await self._call("PUT", f"/workflows/{_seg(workflow_id)}", what=f"workflow {workflow_id}", json=workflow_body(merged))

    async def activate_workflow(self, workflow_id: str) -> dict[str, Any]:
        return await self._call("POST", f"/workflows/{_seg(workflow_id)}/activate", what=f"workflow {workflow_id}")

    async def deactivate_workflow(self, workflow_id: str) -> dict[str, Any]:
        return await self._call("POST", f"/workflows/{_seg(workflow_id)}/deactivate", what=f"workflow {workflow_id}")

    async def delete_workflow(self, workflow_id: str) -> dict[str, Any]:
        return await self._call("DELETE", f"/workflows/{_seg(workflow_id)}", what=f"workflow {workflow_id}")

    async def archive_workflow(self, workflow_id: str) -> dict[str, Any]:
        """Archive; right after a deactivation n8n answers 409 "still being unpublished" for a moment,
        so a 409 is retried for up to 10 s."""
        path, what = f"/workflows/{_seg(workflow_id)}/archive", f"workflow {workflow_id}"
        for _ in range(20):
            try:
                return await self._call("POST", path, what=what)
            except N8nApiError as exc:
                if exc.status != 409:
                    raise
                await asyncio.sleep(0.5)
        return await self._call("POST", path, what=what)

    # ----------------------------------------------------------------- executions
    async def list_executions(self, workflow_id: str | None = None, status: str | None = None, limit: int = 20) -> list[dict[str, Any]]:
        params: dict[str, Any] = {"limit": max(1, min(limit, 250))}
        if workflow_id:
            params["workflowId"] = workflow_id
        if status:
            params["status"] = status
        data = await self._call("GET", "/executions", what="executions", params=params)
        return _data_list(data)

    async def get_execution(self, execution_id: str, include_data: bool = False) -> dict[str, Any]:
        params = {"includeData": "true" if include_data else "false"}
        return await self._call("GET", f"/executions/{_seg(execution_id)}", what=f"execution {execution_id}", params=params)


def summarise_workflow(workflow: dict[str, Any]) -> dict[str, Any]:
    """The fields worth showing in a list (the full workflow JSON is large)."""
    out: dict[str, Any] = {k: workflow.get(k) for k in ("id", "name", "active", "createdAt", "updatedAt") if k in workflow}
    nodes = workflow.get("nodes")
    if isinstance(nodes, list):
        out["nodeCount"] = len(nodes)
    tags = workflow.get("tags")
    if isinstance(tags, list) and tags:
        out["tags"] = [t.get("name") if isinstance(t, dict) else t for t in tags]
    return out


def _data_list(data: Any) -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("data"), list):
        return [d for d in data["data"] if isinstance(d, dict)]
    if isinstance(data, list):
        return [d for d in data if isinstance(d, dict)]
    raise N8nApiError("n8n sent an unexpected list response")


def _seg(value: str) -> str:
    """A path segment: ids never contain '/', so anything that does is a caller error."""
    text = str(value).strip()
    if not text or "/" in text or text in (".", ".."):
        raise N8nApiError(f"invalid id {value!r}")
    return text


def _error_detail(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200] or response.reason_phrase
    if isinstance(body, dict) and body.get("message"):
        return str(body["message"])[:300]
    return str(body)[:200]
