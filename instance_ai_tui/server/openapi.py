"""The OpenAPI 3.1 document of the server, written from the pydantic wire models."""

from __future__ import annotations

from typing import Any

from pydantic import TypeAdapter

from ..protocol.api import (
    CompactRequest,
    ConfirmBody,
    ConfirmResponse,
    CreateThreadRequest,
    ErrorBody,
    ModelList,
    RewindRequest,
    RewindResponse,
    SendMessageRequest,
    SendMessageResponse,
    SetModelRequest,
    ThreadInfo,
    ThreadList,
    ThreadMessages,
    ThreadPermissions,
    ThreadStatus,
    UpdateThreadRequest,
)
from ..protocol.mcp import McpLogLevelRequest, McpPromptRequest, McpPromptText, McpStatus

_REF = "#/components/schemas/{model}"

_ID_PARAM_SCHEMA = {"type": "string", "pattern": "^[A-Za-z0-9._:@-]{1,128}$", "minLength": 1, "maxLength": 128}


def _component_schemas() -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    inputs: list[tuple[str, Any, TypeAdapter[Any]]] = [
        ("SendMessageRequest", "validation", TypeAdapter(SendMessageRequest)),
        ("SendMessageResponse", "serialization", TypeAdapter(SendMessageResponse)),
        ("ConfirmBody", "validation", TypeAdapter(ConfirmBody)),
        ("ConfirmResponse", "serialization", TypeAdapter(ConfirmResponse)),
        ("CreateThreadRequest", "validation", TypeAdapter(CreateThreadRequest)),
        ("UpdateThreadRequest", "validation", TypeAdapter(UpdateThreadRequest)),
        ("ThreadInfo", "serialization", TypeAdapter(ThreadInfo)),
        ("ThreadList", "serialization", TypeAdapter(ThreadList)),
        ("ThreadMessages", "serialization", TypeAdapter(ThreadMessages)),
        ("ThreadStatus", "serialization", TypeAdapter(ThreadStatus)),
        ("RewindRequest", "validation", TypeAdapter(RewindRequest)),
        ("CompactRequest", "validation", TypeAdapter(CompactRequest)),
        ("SetModelRequest", "validation", TypeAdapter(SetModelRequest)),
        ("ModelList", "serialization", TypeAdapter(ModelList)),
        ("ThreadPermissions", "serialization", TypeAdapter(ThreadPermissions)),
        ("RewindResponse", "serialization", TypeAdapter(RewindResponse)),
        ("ErrorBody", "serialization", TypeAdapter(ErrorBody)),
        ("McpStatus", "serialization", TypeAdapter(McpStatus)),
        ("McpPromptRequest", "validation", TypeAdapter(McpPromptRequest)),
        ("McpPromptText", "serialization", TypeAdapter(McpPromptText)),
        ("McpLogLevelRequest", "validation", TypeAdapter(McpLogLevelRequest)),
    ]
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

    def responses(ok: dict[str, Any], *codes: int, status: str = "200", write: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {status: {"description": "OK", **ok}}
        # every route: a token (401), the Host guard (421), the storage (503); writes: the
        # cross-site guard (403) and JSON bodies only (415)
        for code in (*codes, 401, 421, 503, *((403, 415) if write else ())):
            out.setdefault(str(code), {"description": _ERROR_TEXT[code], **error})
        return out

    def body(ref: dict[str, Any], required: bool = True) -> dict[str, Any]:
        return {"required": required, **_json(ref)}

    thread_param = [{"name": "threadId", "in": "path", "required": True, "schema": _ID_PARAM_SCHEMA}]
    request_param = [{"name": "requestId", "in": "path", "required": True, "schema": _ID_PARAM_SCHEMA}]
    p = "/instance-ai"
    paths: dict[str, Any] = {
        f"{p}/health": {
            "get": {
                "operationId": "health",
                "summary": "Identify the server (no token needed)",
                "responses": {"200": {"description": "OK", **_json(_ref("Health"))}},
            }
        },
        f"{p}/chat/{{threadId}}": {
            "post": {
                "operationId": "sendMessage",
                "summary": "Start a run in the thread (created if new; 409 while a run or a rewind is going on)",
                "parameters": thread_param,
                "requestBody": body(refs["SendMessageRequest"]),
                "responses": responses(_json(refs["SendMessageResponse"]), 400, 409, 413),
            }
        },
        f"{p}/chat/{{threadId}}/cancel": {
            "post": {
                "operationId": "cancelRun",
                "summary": "Cancel the thread's active run (idempotent)",
                "parameters": thread_param,
                "responses": responses(_json(_ref("Ok")), 400, 404),
            }
        },
        f"{p}/confirm/{{requestId}}": {
            "post": {
                "operationId": "confirm",
                "summary": "Answer a confirmation request",
                "parameters": request_param,
                "requestBody": body(_ref("ConfirmRequest")),
                "responses": responses(_json(refs["ConfirmResponse"]), 400, 404, 413),
            }
        },
        f"{p}/events/{{threadId}}": {
            "get": {
                "operationId": "events",
                "summary": "The thread's event stream (SSE): replay after the cursor, then live",
                "parameters": [
                    *thread_param,
                    {"name": "lastEventId", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 0}},
                    {"name": "Last-Event-ID", "in": "header", "required": False,
                     "schema": {"type": "string", "pattern": "^ *[0-9]{1,18} *$"}},
                ],
                "responses": responses(
                    {"content": {"text/event-stream": {"schema": {"type": "string"}}}}, 400, 404, write=False
                ),
            }
        },
        f"{p}/threads": {
            "get": {
                "operationId": "listThreads",
                "summary": "List threads, newest first",
                "parameters": [{"name": "search", "in": "query", "required": False, "schema": {"type": "string"}}],
                "responses": responses(_json(refs["ThreadList"]), write=False),
            },
            "post": {
                "operationId": "createThread",
                "summary": "Create a thread (returns the existing one with 200 if the id is taken)",
                "requestBody": body(refs["CreateThreadRequest"], required=False),
                "responses": {
                    **responses(_json(refs["ThreadInfo"]), 400, 413, status="201"),
                    "200": {"description": "Existing thread", **_json(refs["ThreadInfo"])},
                },
            },
        },
        f"{p}/threads/{{threadId}}": {
            "patch": {
                "operationId": "renameThread",
                "summary": "Rename a thread",
                "parameters": thread_param,
                "requestBody": body(refs["UpdateThreadRequest"]),
                "responses": responses(_json(refs["ThreadInfo"]), 400, 404, 413),
            },
            "delete": {
                "operationId": "deleteThread",
                "summary": "Delete a thread and its history",
                "parameters": thread_param,
                "responses": responses(_json(_ref("Ok")), 400, 404),
            },
        },
        f"{p}/threads/{{threadId}}/messages": {
            "get": {
                "operationId": "threadMessages",
                "summary": "History with agent trees and the SSE cursor (nextEventId); with limit, one page "
                "(page 0 the newest; hasMore says whether older messages exist)",
                "parameters": [
                    *thread_param,
                    {"name": "limit", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 1, "maximum": 200}},
                    {"name": "page", "in": "query", "required": False,
                     "schema": {"type": "integer", "minimum": 0, "maximum": 1000}},
                ],
                "responses": responses(_json(refs["ThreadMessages"]), 400, 404, write=False),
            }
        },
        f"{p}/threads/{{threadId}}/status": {
            "get": {
                "operationId": "threadStatus",
                "summary": "Whether a run is active or suspended, and background tasks",
                "parameters": thread_param,
                "responses": responses(_json(refs["ThreadStatus"]), 400, 404, write=False),
            }
        },
        f"{p}/threads/{{threadId}}/model": {
            "put": {
                "operationId": "setThreadModel",
                "summary": "Use a model in this thread from its next run on (empty: the default); the thread must exist",
                "parameters": thread_param,
                "requestBody": body(refs["SetModelRequest"]),
                "responses": responses(_json(refs["ThreadInfo"]), 400, 404, 409, 413),
            }
        },
        f"{p}/threads/{{threadId}}/permissions": {
            "get": {
                "operationId": "threadPermissions",
                "summary": "The tools the user chose 'always allow' for in this thread",
                "parameters": thread_param,
                "responses": responses(_json(refs["ThreadPermissions"]), 400, 404, write=False),
            }
        },
        f"{p}/threads/{{threadId}}/permissions/{{toolName}}": {
            "delete": {
                "operationId": "revokePermission",
                "summary": "Revoke 'always allow' for one tool in this thread (it asks again)",
                "parameters": [*thread_param,
                               {"name": "toolName", "in": "path", "required": True, "schema": _ID_PARAM_SCHEMA}],
                "responses": responses(_json(refs["ThreadPermissions"]), 400, 404),
            }
        },
        f"{p}/models": {
            "get": {
                "operationId": "listModels",
                "summary": "The models a thread can use, the one it uses, context windows where known",
                "parameters": [{"name": "threadId", "in": "query", "required": False, "schema": _ID_PARAM_SCHEMA}],
                "responses": responses(_json(refs["ModelList"]), 400, 404),
            }
        },
        f"{p}/mcp": {
            "get": {
                "operationId": "mcpStatus",
                "summary": "The assistant's MCP servers: state, tools, last error, the end of their stderr",
                "responses": responses(_json(refs["McpStatus"]), write=False),
            }
        },
        f"{p}/mcp/{{name}}/restart": {
            "post": {
                "operationId": "restartMcpServer",
                "summary": "Stop and start one MCP server; the status after its start",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}}],
                "responses": responses(_json(refs["McpStatus"]), 404),
            }
        },
        f"{p}/mcp/{{name}}/prompts/{{prompt}}": {
            "post": {
                "operationId": "mcpPrompt",
                "summary": "One prompt of an MCP server, with its arguments, as the text of a message",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}},
                               {"name": "prompt", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": body(refs["McpPromptRequest"]),
                "responses": responses(_json(refs["McpPromptText"]), 400, 404, 413, 502),
            }
        },
        f"{p}/mcp/{{name}}/approve": {
            "post": {
                "operationId": "approveMcpServer",
                "summary": "Approve a project's (.mcp.json) MCP server: it starts, now and at later starts",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}}],
                "responses": responses(_json(refs["McpStatus"]), 404, 409),
            }
        },
        f"{p}/mcp/{{name}}/sign-out": {
            "post": {
                "operationId": "signOutMcpServer",
                "summary": "Forget an MCP server's sign-in (its OAuth tokens) and stop it",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}}],
                "responses": responses(_json(refs["McpStatus"]), 404, 409),
            }
        },
        f"{p}/mcp/{{name}}/log-level": {
            "post": {
                "operationId": "setMcpLogLevel",
                "summary": "Ask an MCP server to send its log lines from a level up (logging/setLevel)",
                "parameters": [{"name": "name", "in": "path", "required": True,
                                "schema": {"type": "string", "pattern": "^[A-Za-z0-9_-]{1,32}$"}}],
                "requestBody": body(refs["McpLogLevelRequest"]),
                "responses": responses(_json(refs["McpStatus"]), 400, 404, 413, 502),
            }
        },
        f"{p}/threads/{{threadId}}/compact": {
            "post": {
                "operationId": "compactThread",
                "summary": "Compact the thread's context into notes now, as a run of its own (409 while a run is on)",
                "parameters": thread_param,
                "requestBody": body(refs["CompactRequest"]),
                "responses": responses(_json(refs["SendMessageResponse"]), 400, 404, 409, 413),
            }
        },
        f"{p}/threads/{{threadId}}/rewind": {
            "post": {
                "operationId": "rewindThread",
                "summary": "Supersede the turn of a user message and every later one (retry, edit, rewind)",
                "parameters": thread_param,
                "requestBody": body(refs["RewindRequest"]),
                "responses": responses(_json(refs["RewindResponse"]), 400, 404, 409, 413),
            }
        },
    }
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
