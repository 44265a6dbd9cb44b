"""n8n tools on an ``N8nBackend`` (the public API, or the demo's in-memory instance).

Reading is free; changing live behaviour asks first: ``update-workflow``, ``activate-workflow``,
``deactivate-workflow`` and ``archive-workflow`` are ``warning`` approvals, ``delete-workflow`` is
``destructive``. Failures become tool errors with the backend's message (never the API key).

``create-workflow``/``update-workflow`` complete what models leave out (``n8n_workflow``) and refuse
unknown node types before anything is sent, so what reaches n8n is what its public API accepts
(checked against n8n 2.41.1 in ``tests/live_n8n``). ``run-workflow`` exists only on backends that
can run a workflow (the demo): n8n 2.41's public API has no endpoint for it.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ...runtime.tools import Tool, ToolContext, ToolError
from ..approvals import approval
from ..n8n_client import N8nApiError, N8nBackend
from ..n8n_workflow import (
    WorkflowError,
    chain,
    complete_nodes,
    complete_settings,
    complete_workflow,
    layout,
    normalise_connections,
)
from ..previews import workflow_change


class _Args(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")


class ListWorkflowsArgs(_Args):
    active: bool | None = Field(None, description="Only active (true) or inactive (false) workflows")
    name: str | None = Field(None, description="Only workflows whose name contains this text")
    limit: int = Field(50, ge=1, le=250)


class WorkflowIdArgs(_Args):
    workflow_id: str = Field(description="The workflow's id")


class CreateWorkflowArgs(_Args):
    name: str = Field(min_length=1, description="Name of the new workflow")
    nodes: list[dict[str, Any]] = Field(
        default_factory=list,
        description="Nodes: objects with a 'type' (e.g. n8n-nodes-base.scheduleTrigger), 'name' and 'parameters'; "
                    "id, position and typeVersion are filled in when left out")
    connections: dict[str, Any] | None = Field(
        None, description="n8n connections {source: {main: [[{node, type, index}]]}} or {source: [target names]}; "
                          "omitted = the nodes connected in the order given")
    settings: dict[str, Any] | None = Field(None, description="Workflow settings (default: executionOrder v1)")


class UpdateWorkflowArgs(_Args):
    workflow_id: str
    name: str | None = None
    nodes: list[dict[str, Any]] | None = None
    connections: dict[str, Any] | None = None
    settings: dict[str, Any] | None = None


class ListExecutionsArgs(_Args):
    workflow_id: str | None = None
    status: str | None = Field(None, description="success | error | waiting | running | canceled")
    limit: int = Field(20, ge=1, le=250)


class GetExecutionArgs(_Args):
    execution_id: str
    include_data: bool = Field(False, description="Include the node outputs (large)")


class ListNodesArgs(_Args):
    query: str | None = Field(None, description="Words to search the node catalogue for")


async def _call(awaitable: Awaitable[Any]) -> Any:
    try:
        return await awaitable
    except N8nApiError as exc:
        raise ToolError(exc.message) from None


def n8n_tools(backend: N8nBackend) -> list[Tool]:
    """The n8n tool set on ``backend`` (plus ``list-nodes`` and ``run-workflow`` when it has them)."""

    async def list_workflows(args: ListWorkflowsArgs, ctx: ToolContext) -> Any:
        return await _call(backend.list_workflows(active=args.active, name=args.name, limit=args.limit))

    async def get_workflow(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
        return await _call(backend.get_workflow(args.workflow_id))

    async def create_workflow(args: CreateWorkflowArgs, ctx: ToolContext) -> Any:
        catalogue = await backend.node_catalogue()
        try:
            body = complete_workflow(args.name, args.nodes, args.connections, args.settings, catalogue)
        except WorkflowError as exc:
            raise ToolError(exc.message) from None
        return compact_workflow(await _call(backend.create_workflow(body)))

    async def update_workflow(args: UpdateWorkflowArgs, ctx: ToolContext) -> Any:
        changes = args.model_dump(exclude={"workflow_id"}, exclude_none=True)
        if not changes:
            raise ToolError("nothing to update: give name, nodes, connections or settings")
        if args.nodes is not None or args.connections is not None:
            current = await _call(backend.get_workflow(args.workflow_id))
            try:
                changes.update(_completed_update(current, args, await backend.node_catalogue()))
            except WorkflowError as exc:
                raise ToolError(exc.message) from None
        if args.settings is not None:
            try:
                changes["settings"] = complete_settings(args.settings)
            except WorkflowError as exc:
                raise ToolError(exc.message) from None
        return compact_workflow(await _call(backend.update_workflow(args.workflow_id, changes)))

    async def preview_update(args: UpdateWorkflowArgs, ctx: ToolContext) -> dict[str, Any] | None:
        """What the update changes against the workflow as it is now (for the approval card)."""
        current = await backend.get_workflow(args.workflow_id)
        if not isinstance(current, dict):
            return None
        return workflow_change(current, args.nodes, args.connections, args.name)

    async def activate(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
        return compact_workflow(await _call(backend.activate_workflow(args.workflow_id)))

    async def deactivate(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
        return compact_workflow(await _call(backend.deactivate_workflow(args.workflow_id)))

    async def delete(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
        return compact_workflow(await _call(backend.delete_workflow(args.workflow_id)))

    async def archive(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
        return compact_workflow(await _call(backend.archive_workflow(args.workflow_id)))

    async def list_executions(args: ListExecutionsArgs, ctx: ToolContext) -> Any:
        return await _call(backend.list_executions(workflow_id=args.workflow_id, status=args.status, limit=args.limit))

    async def get_execution(args: GetExecutionArgs, ctx: ToolContext) -> Any:
        return await _call(backend.get_execution(args.execution_id, include_data=args.include_data))

    tools = [
        Tool("list-workflows", f"List the workflows of {backend.label}.", ListWorkflowsArgs, list_workflows),
        Tool("get-workflow", "Get one workflow with its nodes and connections.", WorkflowIdArgs, get_workflow),
        Tool("create-workflow", "Create a new (inactive) workflow.", CreateWorkflowArgs, create_workflow),
        Tool("update-workflow", "Change a workflow's name, nodes, connections or settings. Asks the user first.",
             UpdateWorkflowArgs, update_workflow,
             **approval("warning", lambda a: f"Update workflow {a.workflow_id}?", preview_update)),
        Tool("activate-workflow", "Activate a workflow so it runs on its trigger. Asks the user first.",
             WorkflowIdArgs, activate,
             **approval("warning", lambda a: f"Activate workflow {a.workflow_id}? It will start running on its trigger.")),
        Tool("deactivate-workflow", "Deactivate a workflow. Asks the user first.", WorkflowIdArgs, deactivate,
             **approval("warning", lambda a: f"Deactivate workflow {a.workflow_id}? Its trigger stops firing.")),
        Tool("archive-workflow", "Archive a workflow (it leaves the list and stops; it can be restored in n8n). "
             "Asks the user first.", WorkflowIdArgs, archive,
             **approval("warning", lambda a: f"Archive workflow {a.workflow_id}?")),
        Tool("delete-workflow", "Delete a workflow permanently. Asks the user first.", WorkflowIdArgs, delete,
             **approval("destructive", lambda a: f"Delete workflow {a.workflow_id}? This cannot be undone.")),
        Tool("list-executions", "List recent executions, optionally of one workflow.", ListExecutionsArgs,
             list_executions),
        Tool("get-execution", "Get one execution (with node outputs when includeData).", GetExecutionArgs,
             get_execution),
    ]
    list_nodes = getattr(backend, "list_nodes", None)
    if list_nodes is not None:
        async def nodes(args: ListNodesArgs, ctx: ToolContext) -> Any:
            return await _call(list_nodes(args.query))

        tools.append(Tool("list-nodes", "Search the node catalogue (node types and what they do).", ListNodesArgs, nodes))
    run_workflow = getattr(backend, "run_workflow", None)
    if run_workflow is not None:
        async def run(args: WorkflowIdArgs, ctx: ToolContext) -> Any:
            return await _call(run_workflow(args.workflow_id))

        tools.append(Tool("run-workflow", "Run a workflow once (manual execution).", WorkflowIdArgs, run))
    return tools


def _completed_update(current: dict[str, Any], args: UpdateWorkflowArgs, catalogue: Any) -> dict[str, Any]:
    """Nodes and connections of an update, completed like a new workflow's. Nodes keep the id and
    position of the current node with the same name; connections left out keep the current ones
    that still fit (or link the nodes in order when none do)."""
    old_nodes = {n.get("name"): n for n in current.get("nodes") or [] if isinstance(n, dict)}
    out: dict[str, Any] = {}
    if args.nodes is not None:
        given = []
        for node in args.nodes:
            old = old_nodes.get(node.get("name")) if isinstance(node, dict) else None
            if old is not None and isinstance(node, dict):
                node = {**{k: old[k] for k in ("id", "position", "typeVersion") if k in old}, **node}
            given.append(node)
        nodes = complete_nodes(given, catalogue)
    else:
        nodes = [dict(n) for n in old_nodes.values()]
    names = {n["name"] for n in nodes}
    if args.connections is not None:
        links = normalise_connections(args.connections, names)
    else:
        kept = {}
        for source, kinds in (current.get("connections") or {}).items():
            if source not in names or not isinstance(kinds, dict):
                continue
            kept[source] = {kind: [[t for t in output or [] if isinstance(t, dict) and t.get("node") in names]
                                   for output in outputs or []] for kind, outputs in kinds.items()}
        links = kept if kept or len(nodes) < 2 else chain(nodes)
    layout(nodes, links)
    out["nodes"], out["connections"] = nodes, links
    return out


def compact_workflow(workflow: Any) -> Any:
    """What the model needs of a workflow n8n sent back (the full JSON repeats every parameter)."""
    if not isinstance(workflow, dict) or "nodes" not in workflow:
        return workflow
    out = {k: workflow[k] for k in ("id", "name", "active", "isArchived") if k in workflow}
    out["nodes"] = [{k: n.get(k) for k in ("name", "type", "typeVersion", "position")}
                    for n in workflow.get("nodes") or [] if isinstance(n, dict)]
    out["connections"] = {source: [t.get("node") for outputs in (kinds or {}).values() for output in outputs or []
                                   for t in output or [] if isinstance(t, dict)]
                          for source, kinds in (workflow.get("connections") or {}).items() if isinstance(kinds, dict)}
    return out
