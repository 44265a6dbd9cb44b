"""The OpenAPI 3.1 document of the server, written from the pydantic wire models."""

from __future__ import annotations

import copy
from typing import Any

from pydantic import TypeAdapter

_REF = "#/components/schemas/{model}"

_ID_PARAM_SCHEMA = {"type": "string", "pattern": "^[A-Za-z0-9._:@-]{1,128}$", "minLength": 1, "maxLength": 128}


def _component_schemas() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    """The schemas of the bodies (validation) and answers (serialization) the operations name."""
    from ..protocol import api, mcp

    bodies = {"ConfirmBody"} | {op[5] for op in OPERATIONS if op[5] and op[5] != "ConfirmRequest"}
    answers = {"ErrorBody"} | {op[6] for op in OPERATIONS if op[6] and op[6] != "Ok"}
    inputs: list[tuple[str, Any, TypeAdapter[Any]]] = [
        (name, mode, TypeAdapter(getattr(api, name, None) or getattr(mcp, name)))
        for mode, names in (("validation", bodies), ("serialization", answers)) for name in sorted(names)]
    mapping, defs = TypeAdapter.json_schemas(inputs, ref_template=_REF)
    refs = {key[0]: value for key, value in mapping.items()}
    return refs, dict(defs.get("$defs", {}))


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF.format(model=name)}


def _json(schema: dict[str, Any]) -> dict[str, Any]:
    return {"content": {"application/json": {"schema": schema}}}


def _match_the_validation(schemas: dict[str, Any]) -> None:
    """Where the server checks more than the pydantic models say, the document says so too
    (schemathesis ``--checks all`` found these: a schema-valid request the API rejected)."""
    non_blank = {"type": "string", "minLength": 1, "pattern": r"\S"}
    send = schemas["SendMessageRequest"]
    send["properties"]["message"] = {**non_blank, "title": "Message"}
    send["required"] = sorted({*send.get("required", []), "message"})
    schemas["UpdateThreadRequest"] = {
        "type": "object",
        "title": "UpdateThreadRequest",
        "description": "``PATCH threads/:threadId``: rename (metadata cannot be changed over this API).",
        "properties": {"title": {**non_blank, "maxLength": 255, "title": "Title"}},
        "required": ["title"],
        "additionalProperties": False,
    }
    create = schemas["CreateThreadRequest"]["properties"]
    create["threadId"] = {"anyOf": [_ID_PARAM_SCHEMA, {"type": "null"}], "default": None, "title": "Threadid"}
    create["title"] = {"anyOf": [{"type": "string", "maxLength": 255}, {"type": "null"}], "default": None,
                       "title": "Title"}
    items = schemas.get("AgentNode", {}).get("properties", {}).get("timeline", {}).get("items", {})
    if "oneOf" in items and "discriminator" not in items:
        items["anyOf"] = items.pop("oneOf")  # OtherEntry takes any type: a text entry matched two of them
    for schema in schemas.values():  # a kind-tagged confirm body must name its kind (else it is an approval)
        kind = (schema.get("properties") or {}).get("kind")
        if isinstance(kind, dict) and "const" in kind and schema.get("title", "").endswith("Confirm"):
            schema["required"] = sorted({*schema.get("required", []), "kind"})


PREFIX = "/instance-ai"
_EVENT_STREAM = {"content": {"text/event-stream": {"schema": {"type": "string"}}}}


def _param(name: str, where: str = "path", schema: dict[str, Any] = _ID_PARAM_SCHEMA) -> dict[str, Any]:
    return {"name": name, "in": where, "required": where == "path", "schema": schema}


_THREAD = (_param("threadId"),)
_MCP = (_param("name", schema={"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}),)
_INT = "integer"

#: the routes (``server.app`` serves each with its handler of the operationId's name in snake case):
#: path, method, operationId, summary, parameters, request body, answer (None: the SSE stream), the
#: error codes of its own (the ones every route and every write has are added)
OPERATIONS: tuple[tuple[str, str, str, str, tuple[dict[str, Any], ...], str | None, str | None,
                         tuple[int, ...]], ...] = (
    ("/chat/{threadId}", "post", "sendMessage",
     "Start a run in the thread (created if new; 409 while a run or a rewind is going on)",
     _THREAD, "SendMessageRequest", "SendMessageResponse", (400, 409, 413)),
    ("/chat/{threadId}/cancel", "post", "cancelRun", "Cancel the thread's active run (idempotent)",
     _THREAD, None, "Ok", (400, 404)),
    ("/confirm/{requestId}", "post", "confirm", "Answer a confirmation request",
     (_param("requestId"),), "ConfirmRequest", "ConfirmResponse", (400, 404, 413)),
    ("/events/{threadId}", "get", "events", "The thread's event stream (SSE): replay after the cursor, then live",
     (*_THREAD, _param("lastEventId", "query", {"type": _INT, "minimum": 0}),
      _param("Last-Event-ID", "header", {"type": "string", "pattern": "^ *[0-9]{1,18} *$"})),
     None, None, (400, 404)),
    ("/threads", "get", "listThreads", "List threads, newest first",
     (_param("search", "query", {"type": "string"}),), None, "ThreadList", ()),
    ("/threads", "post", "createThread", "Create a thread (returns the existing one with 200 if the id is taken)",
     (), "CreateThreadRequest", "ThreadInfo", (400, 413)),
    ("/threads/{threadId}", "patch", "renameThread", "Rename a thread",
     _THREAD, "UpdateThreadRequest", "ThreadInfo", (400, 404, 413)),
    ("/threads/{threadId}", "delete", "deleteThread", "Delete a thread and its history",
     _THREAD, None, "Ok", (400, 404)),
    ("/threads/{threadId}/messages", "get", "threadMessages",
     "History with agent trees and the SSE cursor (nextEventId); with limit, one page "
     "(page 0 the newest; hasMore says whether older messages exist)",
     (*_THREAD, _param("limit", "query", {"type": _INT, "minimum": 1, "maximum": 200}),
      _param("page", "query", {"type": _INT, "minimum": 0, "maximum": 1000})),
     None, "ThreadMessages", (400, 404)),
    ("/threads/{threadId}/status", "get", "threadStatus", "Whether a run is active or suspended, and background tasks",
     _THREAD, None, "ThreadStatus", (400, 404)),
    ("/threads/{threadId}/model", "put", "setThreadModel",
     "Use a model in this thread from its next run on (empty: the default); the thread must exist",
     _THREAD, "SetModelRequest", "ThreadInfo", (400, 404, 409, 413)),
    ("/threads/{threadId}/permissions", "get", "threadPermissions",
     "The tools the user chose 'always allow' for in this thread", _THREAD, None, "ThreadPermissions", (400, 404)),
    ("/threads/{threadId}/permissions/{toolName}", "delete", "revokePermission",
     "Revoke 'always allow' for one tool in this thread (it asks again)",
     (*_THREAD, _param("toolName")), None, "ThreadPermissions", (400, 404)),
    ("/models", "get", "listModels", "The models a thread can use, the one it uses, context windows where known",
     (_param("threadId", "query"),), None, "ModelList", (400, 404)),
    ("/mcp", "get", "mcpStatus", "The assistant's MCP servers: state, tools, last error, the end of their stderr",
     (), None, "McpStatus", ()),
    ("/mcp/{name}/restart", "post", "restartMcpServer", "Stop and start one MCP server; the status after its start",
     _MCP, None, "McpStatus", (404,)),
    ("/mcp/{name}/prompts/{prompt}", "post", "mcpPrompt",
     "One prompt of an MCP server, with its arguments, as the text of a message",
     (*_MCP, _param("prompt", schema={"type": "string"})), "McpPromptRequest", "McpPromptText", (400, 404, 413, 502)),
    ("/mcp/{name}/approve", "post", "approveMcpServer",
     "Approve a project's (.mcp.json) MCP server: it starts, now and at later starts", _MCP, None, "McpStatus",
     (404, 409)),
    ("/mcp/{name}/sign-out", "post", "signOutMcpServer",
     "Forget an MCP server's sign-in (its OAuth tokens) and stop it", _MCP, None, "McpStatus", (404, 409)),
    ("/mcp/{name}/log-level", "post", "setMcpLogLevel",
     "Ask an MCP server to send its log lines from a level up (logging/setLevel)",
     _MCP, "McpLogLevelRequest", "McpStatus", (400, 404, 413, 502)),
    ("/threads/{threadId}/compact", "post", "compactThread",
     "Compact the thread's context into notes now, as a run of its own (409 while a run is on)",
     _THREAD, "CompactRequest", "SendMessageResponse", (400, 404, 409, 413)),
    ("/threads/{threadId}/rewind", "post", "rewindThread",
     "Supersede the turn of a user message and every later one (retry, edit, rewind)",
     _THREAD, "RewindRequest", "RewindResponse", (400, 404, 409, 413)),
)


def build_openapi(version: str) -> dict[str, Any]:
    refs, schemas = _component_schemas()
    _match_the_validation(schemas)
    # The seed's bare {approved} (no kind) is an approval too.
    schemas["SeedApproval"] = {
        "type": "object",
        "properties": {"approved": {"type": "boolean"}},
        "required": ["approved"],
        "additionalProperties": False,
    }
    schemas["ConfirmRequest"] = {"anyOf": [_ref("SeedApproval"), refs["ConfirmBody"]]}
    schemas["Ok"] = {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}
    schemas["Health"] = {
        "type": "object",
        "properties": {
            "service": {"const": "instance-ai"},
            "version": {"type": "string"},
            "model": {"type": "string"},
            "authRequired": {"type": "boolean"},
        },
        "required": ["service", "version", "model", "authRequired"],
    }
    error = _json(refs["ErrorBody"])
    paths: dict[str, Any] = {
        f"{PREFIX}/health": {"get": {"operationId": "health", "summary": "Identify the server (no token needed)",
                                      "responses": {"200": {"description": "OK", **_json(_ref("Health"))}}}},
    }
    for path, method, operation_id, summary, parameters, request, answer, codes in OPERATIONS:
        ok = _json(refs.get(answer) or _ref(answer)) if answer else _EVENT_STREAM
        status = "201" if operation_id == "createThread" else "200"
        responses: dict[str, Any] = {status: {"description": "OK", **ok}}
        # every route: a token (401), the Host guard (421), the storage (503); writes: the
        # cross-site guard (403) and JSON bodies only (415)
        for code in (*codes, 401, 421, 503, *((403, 415) if method != "get" else ())):
            responses[str(code)] = {"description": _ERROR_TEXT[code], **error}
        operation: dict[str, Any] = {"operationId": operation_id, "summary": summary}
        if parameters:
            operation["parameters"] = copy.deepcopy(list(parameters))
        if request:
            operation["requestBody"] = {"required": operation_id != "createThread",
                                        **_json(refs.get(request) or _ref(request))}
        operation["responses"] = responses
        if operation_id == "createThread":
            responses["200"] = {"description": "Existing thread", **ok}
        paths.setdefault(f"{PREFIX}{path}", {})[method] = operation
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Instance AI",
            "version": version,
            "description": "The Instance AI streaming protocol: chat, SSE events, confirmations, threads.",
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}, {}],
    }


_ERROR_TEXT = {
    400: "Invalid input",
    401: "Missing or invalid token",
    403: "Cross-site request refused (Origin or Sec-Fetch-Site of another site)",
    415: "The body is not application/json",
    421: "Host name not served (only loopback names and the bound address, without a token)",
    503: "Storage unavailable for now (Redis or SQLite); retry after the Retry-After seconds",
    404: "Unknown thread or request",
    409: "A run is already active in the thread, or the request conflicts with its state (no such message to "
         "rewind to, a model the service cannot use)",
    413: "Body too large",
    502: "The MCP server could not do it (its words follow)",
}
