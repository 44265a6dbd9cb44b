"""A small fake of the n8n public API (Starlette), served by uvicorn on 127.0.0.1 in tests.

Writes are checked as n8n 2.41.1 checks them (``public_api_error``: the same 400 messages for missing
settings/positions/names, read-only or unknown keys, bad connections), activation needs a trigger,
and ``/types/nodes.json`` is refused to an API key (401) as there. ``tests/live_n8n`` shows the real
server refusing the same bodies."""

from __future__ import annotations

import itertools
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from instance_ai_tui.assistant.n8n_workflow import activation_error, public_api_error

API_KEY = "test-n8n-key-123"


def make_fake_n8n() -> tuple[Starlette, dict[str, Any]]:
    """The app and its state (workflows, executions, seen requests) for assertions."""
    ids = itertools.count(1)
    state: dict[str, Any] = {
        "workflows": {
            "w1": {"id": "w1", "name": "Weather to Slack", "active": False, "isArchived": False,
                   "nodes": [{"id": "n1", "name": "Schedule", "type": "n8n-nodes-base.scheduleTrigger", "typeVersion": 1.2,
                              "position": [0, 0], "parameters": {}}],
                   "connections": {}, "settings": {}},
        },
        "executions": {"e1": {"id": "e1", "workflowId": "w1", "status": "error", "data": {"resultData": {"error": "401"}}}},
        "requests": [],
    }

    def auth(request: Request) -> Response | None:
        state["requests"].append((request.method, request.url.path, dict(request.query_params)))
        if request.headers.get("x-n8n-api-key") != API_KEY:
            return JSONResponse({"message": "unauthorized"}, status_code=401)
        return None

    async def workflows(request: Request) -> Response:
        if (denied := auth(request)) is not None:
            return denied
        if request.method == "POST":
            body = await request.json()
            if problem := public_api_error(body):
                return JSONResponse({"message": problem}, status_code=400)
            wid = f"new{next(ids)}"
            wf = {"id": wid, "active": False, "isArchived": False, **body}
            state["workflows"][wid] = wf
            return JSONResponse(wf)
        rows = list(state["workflows"].values())
        if request.query_params.get("active") == "true":
            rows = [w for w in rows if w["active"]]
        return JSONResponse({"data": rows, "nextCursor": None})

    async def workflow(request: Request) -> Response:
        if (denied := auth(request)) is not None:
            return denied
        wid = request.path_params["wid"]
        wf = state["workflows"].get(wid)
        if wf is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if request.method == "PUT":
            body = await request.json()
            if problem := public_api_error(body):
                return JSONResponse({"message": problem}, status_code=400)
            wf.update(body)
        elif request.method == "DELETE":
            del state["workflows"][wid]
        return JSONResponse(wf)

    async def toggle(request: Request) -> Response:
        if (denied := auth(request)) is not None:
            return denied
        wf = state["workflows"].get(request.path_params["wid"])
        if wf is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        op = request.path_params["op"]
        if op == "activate" and (problem := activation_error(wf)):
            return JSONResponse({"message": problem}, status_code=400)
        if op == "archive":
            wf["isArchived"], wf["active"] = True, False
        elif op in ("activate", "deactivate"):
            wf["active"] = op == "activate"
        else:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        return JSONResponse(wf)

    async def executions(request: Request) -> Response:
        if (denied := auth(request)) is not None:
            return denied
        rows = [{k: v for k, v in e.items() if k != "data"} for e in state["executions"].values()]
        if wid := request.query_params.get("workflowId"):
            rows = [r for r in rows if r["workflowId"] == wid]
        return JSONResponse({"data": rows, "nextCursor": None})

    async def execution(request: Request) -> Response:
        if (denied := auth(request)) is not None:
            return denied
        ex = state["executions"].get(request.path_params["eid"])
        if ex is None:
            return JSONResponse({"message": "Not Found"}, status_code=404)
        if request.query_params.get("includeData") != "true":
            ex = {k: v for k, v in ex.items() if k != "data"}
        return JSONResponse(ex)

    async def node_types(request: Request) -> Response:
        state["requests"].append((request.method, request.url.path, {}))
        return JSONResponse({"status": "error", "message": "Unauthorized"}, status_code=401)

    app = Starlette(routes=[
        Route("/types/nodes.json", node_types, methods=["GET"]),
        Route("/api/v1/workflows", workflows, methods=["GET", "POST"]),
        Route("/api/v1/workflows/{wid}", workflow, methods=["GET", "PUT", "DELETE"]),
        Route("/api/v1/workflows/{wid}/{op:str}", toggle, methods=["POST"]),
        Route("/api/v1/executions", executions, methods=["GET"]),
        Route("/api/v1/executions/{eid}", execution, methods=["GET"]),
    ])
    return app, state
