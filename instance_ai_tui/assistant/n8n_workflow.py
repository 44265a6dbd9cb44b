"""Workflows the real n8n public API accepts, from what models write.

``complete_workflow`` turns the nodes a model sends (often just ``type``, ``name``, ``parameters``) into a
body n8n 2.41's ``POST/PUT /api/v1/workflows`` accepts and its editor opens: node ids, positions laid out
left to right in connection order, ``typeVersion`` (the instance's catalogue, else the built-in table
of n8n 2.41.1), connections in order when omitted, ``settings``. Problems are a ``WorkflowError``
with a message the model can act on (unknown node type -> the closest known types), raised before
anything is sent.

``public_api_error`` is the validation the real public API applies to a create/update body, with its
messages; the fake n8n and the demo's simulated instance use it so that neither accepts what the
real server refuses (checked against n8n 2.41.1 by ``tests/live_n8n``).
"""

from __future__ import annotations

import difflib
import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from itertools import pairwise
from typing import Any

from .n8n_node_table import node_table

#: keys of a node the public API accepts (its ``node`` schema has additionalProperties: false)
NODE_KEYS = frozenset({
    "id", "name", "webhookId", "disabled", "notesInFlow", "notes", "type", "typeVersion", "executeOnce",
    "alwaysOutputData", "retryOnFail", "maxTries", "waitBetweenTries", "continueOnFail", "onError", "position",
    "parameters", "credentials", "customTelemetryTags", "createdAt", "updatedAt",
})
#: keys of ``settings`` the public API accepts
SETTINGS_KEYS = frozenset({
    "saveExecutionProgress", "saveManualExecutions", "saveDataErrorExecution", "saveDataSuccessExecution",
    "executionTimeout", "errorWorkflow", "timezone", "executionOrder", "binaryMode", "callerPolicy", "callerIds",
    "timeSavedMode", "timeSavedPerExecution", "redactionPolicy", "availableInMCP", "customTelemetryTags",
    "credentialResolverId",
})
#: body keys of a workflow write: writable, and read-only (refused with "... is read-only")
WORKFLOW_WRITABLE = frozenset({"name", "description", "parentFolderId", "nodes", "connections", "nodeGroups",
                               "settings", "staticData", "pinData", "shared", "activeVersion"})
WORKFLOW_READ_ONLY = frozenset({"id", "active", "createdAt", "updatedAt", "isArchived", "versionId",
                                "triggerCount", "meta", "tags"})
DEFAULT_SETTINGS: dict[str, Any] = {"executionOrder": "v1"}
#: packages whose node types the built-in table lists completely (others: community nodes, passed through)
BUILT_IN_PACKAGES = ("n8n-nodes-base.", "@n8n/n8n-nodes-langchain.")
X_STEP, Y_STEP = 220, 160
#: triggers that do not make a workflow activatable (n8n 2.41.1 refuses "no trigger node" with only these)
NOT_ACTIVATING = frozenset({"n8n-nodes-base.manualTrigger", "n8n-nodes-base.executeWorkflowTrigger",
                            "n8n-nodes-base.errorTrigger", "n8n-nodes-base.evaluationTrigger"})


class WorkflowError(ValueError):
    """The workflow cannot be sent as it is; ``message`` says what to change."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


@dataclass(frozen=True)
class NodeType:
    name: str
    default_version: float | int
    display_name: str
    trigger: bool
    versions: tuple[float | int, ...]


class NodeCatalogue:
    """The node types an instance knows (its ``/types/nodes.json``, or the built-in table)."""

    def __init__(self, types: Iterable[NodeType], *, source: str, complete: bool = True) -> None:
        self.types = {t.name: t for t in types}
        self.source = source
        #: False when only the built-in packages are listed (community nodes pass unchecked)
        self.complete = complete

    @classmethod
    def built_in(cls) -> NodeCatalogue:
        return cls((NodeType(name, v, display, trig, versions) for name, (v, display, trig, versions)
                    in node_table().items()), source="the node table of n8n 2.41.1", complete=False)

    @classmethod
    def from_nodes_json(cls, data: Any) -> NodeCatalogue:
        """From n8n's ``/types/nodes.json`` (one entry per type and version group)."""
        if not isinstance(data, list):
            raise ValueError("a node catalogue is a list of node descriptions")
        merged: dict[str, NodeType] = {}
        for entry in data:
            if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
                continue
            raw = entry.get("version")
            versions = tuple(v for v in (raw if isinstance(raw, list) else [raw]) if isinstance(v, int | float))
            if not versions:
                continue
            default = entry.get("defaultVersion")
            default = default if isinstance(default, int | float) else max(versions)
            group = entry.get("group") or []
            trigger = "trigger" in group or entry["name"].endswith("Trigger")
            old = merged.get(entry["name"])
            if old is not None:
                versions = tuple(sorted(set(old.versions) | set(versions)))
                default = max(default, old.default_version) if entry.get("defaultVersion") is None else default
            merged[entry["name"]] = NodeType(entry["name"], default, str(entry.get("displayName") or entry["name"]),
                                             trigger, tuple(sorted(versions)))
        return cls(merged.values(), source="the instance's node catalogue")

    def resolve(self, type_name: str) -> NodeType | None:
        """The node type for ``type_name``; a bare name (``httpRequest``) matches one package's type."""
        if type_name in self.types:
            return self.types[type_name]
        if "." not in type_name:
            matches = [t for name, t in self.types.items() if name.rsplit(".", 1)[-1] == type_name]
            if len(matches) == 1:
                return matches[0]
        return None

    def closest(self, type_name: str, count: int = 3) -> list[str]:
        short = {name.rsplit(".", 1)[-1].lower(): name for name in self.types}
        wanted = type_name.rsplit(".", 1)[-1].lower()
        found = [short[s] for s in difflib.get_close_matches(wanted, list(short), n=count, cutoff=0.5)]
        for name in difflib.get_close_matches(type_name, list(self.types), n=count, cutoff=0.5):
            if name not in found:
                found.append(name)
        if len(found) < count:
            found += [name for s, name in short.items() if wanted and wanted in s and name not in found]
        return found[:count]


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _fmt(version: float | int) -> str:
    return str(int(version)) if float(version).is_integer() else str(version)


def _unique(name: str, taken: set[str]) -> str:
    if name not in taken:
        return name
    n = 1
    while f"{name}{n}" in taken:
        n += 1
    return f"{name}{n}"


def complete_nodes(nodes: list[Any], catalogue: NodeCatalogue, *, keep: Iterable[str] = ()) -> list[dict[str, Any]]:
    """Nodes with type checked and id, name, typeVersion, parameters filled in (positions: ``layout``)."""
    out: list[dict[str, Any]] = []
    taken: set[str] = set(keep)
    for index, raw in enumerate(nodes):
        if not isinstance(raw, Mapping):
            raise WorkflowError(f"nodes[{index}] must be an object with at least a 'type'")
        node = dict(raw)
        extra = sorted(set(node) - NODE_KEYS)
        if extra:
            raise WorkflowError(f"nodes[{index}] has keys n8n does not accept: {', '.join(extra)} "
                                f"(a node has type, name, parameters, typeVersion, position, credentials, ...; "
                                f"put settings of the node into 'parameters')")
        type_name = node.get("type")
        if not isinstance(type_name, str) or not type_name.strip():
            raise WorkflowError(f"nodes[{index}] needs a 'type' such as 'n8n-nodes-base.httpRequest'")
        info = catalogue.resolve(type_name.strip())
        if info is None:
            community = not catalogue.complete and not type_name.startswith(BUILT_IN_PACKAGES) and "." in type_name
            if not community:
                near = catalogue.closest(type_name)
                hint = f"; closest known types: {', '.join(near)}" if near else ""
                raise WorkflowError(f"unknown node type {type_name!r} in nodes[{index}] "
                                    f"(not in {catalogue.source}){hint}")
            if not _number(node.get("typeVersion")):
                raise WorkflowError(f"nodes[{index}]: {type_name!r} is not a built-in node; give its 'typeVersion'")
        else:
            node["type"] = info.name
            version = node.get("typeVersion")
            if version is None:
                node["typeVersion"] = info.default_version
            elif not _number(version) or version not in info.versions:
                raise WorkflowError(f"nodes[{index}]: {info.name} has no typeVersion {version!r} "
                                    f"(known: {', '.join(_fmt(v) for v in info.versions)})")
        name = node.get("name")
        if name is None or (isinstance(name, str) and not name.strip()):
            name = _unique(info.display_name if info else type_name.rsplit(".", 1)[-1], taken)
        elif not isinstance(name, str):
            raise WorkflowError(f"nodes[{index}].name must be text")
        elif name in taken:
            raise WorkflowError(f"two nodes are named {name!r}: node names must be unique")
        node["name"] = name
        taken.add(name)
        if not isinstance(node.get("id"), str) or not node["id"]:
            node["id"] = str(uuid.uuid4())
        if node.get("parameters") is None:
            node["parameters"] = {}
        elif not isinstance(node["parameters"], Mapping):
            raise WorkflowError(f"nodes[{index}].parameters must be an object")
        position = node.get("position")
        if position is not None and not (isinstance(position, list | tuple) and len(position) == 2
                                         and all(_number(p) for p in position)):
            raise WorkflowError(f"nodes[{index}].position must be [x, y] numbers (or left out)")
        out.append(node)
    return out


def normalise_connections(connections: Any, names: set[str]) -> dict[str, Any]:
    """n8n's ``{source: {main: [[{node, type, index}]]}}`` from that or the shorthands models write
    (``{"A": "B"}``, ``{"A": ["B", "C"]}``, targets as names); every name must exist."""
    if not isinstance(connections, Mapping):
        raise WorkflowError("connections must be an object: {sourceNode: {main: [[{node, type, index}]]}}")
    out: dict[str, Any] = {}
    for source, value in connections.items():
        if source not in names:
            raise WorkflowError(f"connections: source {source!r} is not a node of this workflow "
                                f"(nodes: {', '.join(sorted(names))})")
        if isinstance(value, str | list):
            value = {"main": [value] if isinstance(value, str) or not any(isinstance(v, list) for v in value)
                     else value}
        if not isinstance(value, Mapping):
            raise WorkflowError(f"connections[{source!r}] must be an object like {{main: [[{{node: ...}}]]}}")
        by_kind: dict[str, Any] = {}
        for kind, outputs in value.items():
            if not isinstance(outputs, list):
                raise WorkflowError(f"connections[{source!r}][{kind!r}] must be a list of outputs")
            lists: list[list[dict[str, Any]]] = []
            for output in outputs:
                if output is None:
                    lists.append([])
                    continue
                targets = output if isinstance(output, list) else [output]
                fixed = []
                for target in targets:
                    target = {"node": target} if isinstance(target, str) else target
                    if not isinstance(target, Mapping) or not isinstance(target.get("node"), str):
                        raise WorkflowError(f"connections[{source!r}]: a target is {{node: name, type, index}}")
                    if target["node"] not in names:
                        raise WorkflowError(f"connections[{source!r}]: target {target['node']!r} is not a node "
                                            f"of this workflow (nodes: {', '.join(sorted(names))})")
                    fixed.append({"node": target["node"], "type": str(target.get("type") or kind),
                                  "index": int(target.get("index") or 0)})
                lists.append(fixed)
            by_kind[str(kind)] = lists
        out[source] = by_kind
    return out


def chain(nodes: list[dict[str, Any]]) -> dict[str, Any]:
    """Connections linking the nodes in the given order (main output 0 to main input 0)."""
    return {a["name"]: {"main": [[{"node": b["name"], "type": "main", "index": 0}]]} for a, b in pairwise(nodes)}


def layout(nodes: list[dict[str, Any]], connections: Mapping[str, Any]) -> None:
    """Positions for nodes that have none: columns by the longest path from a start node, rows in
    connection order; left to right like the editor's tidy-up. Nodes with a position keep it."""
    names = [n["name"] for n in nodes]
    edges: dict[str, list[str]] = {name: [] for name in names}
    incoming: dict[str, int] = dict.fromkeys(names, 0)
    for source, kinds in connections.items():
        for outputs in (kinds or {}).values():
            for output in outputs or []:
                for target in output or []:
                    if source in edges and target.get("node") in incoming and target["node"] not in edges[source]:
                        edges[source].append(target["node"])
                        incoming[target["node"]] += 1
    column: dict[str, int] = {}
    order: list[str] = []
    queue = [name for name in names if incoming[name] == 0] or names[:1]
    for name in queue:
        column.setdefault(name, 0)
    seen: set[str] = set()
    while queue:
        name = queue.pop(0)
        if name in seen:
            continue
        seen.add(name)
        order.append(name)
        for target in edges[name]:
            if target not in seen and column.get(target, -1) < column[name] + 1 and len(seen) <= len(names):
                column[target] = column[name] + 1
            queue.append(target)
    for name in names:  # unreachable or cyclic leftovers: after the rest
        if name not in column:
            column[name] = 0
            order.append(name)
    rows: dict[int, int] = {}
    placed = {n["name"]: n for n in nodes}
    for name in order:
        node = placed[name]
        col = column[name]
        row = rows.get(col, 0)
        rows[col] = row + 1
        if node.get("position") is None:
            node["position"] = [col * X_STEP, row * Y_STEP]
        else:
            node["position"] = list(node["position"])


def complete_workflow(name: str | None, nodes: list[Any], connections: Any, settings: Any,
                      catalogue: NodeCatalogue) -> dict[str, Any]:
    """A create body: every node complete and placed, connections checked (or in order), settings."""
    done = complete_nodes(nodes, catalogue)
    names = {n["name"] for n in done}
    links = chain(done) if connections is None else normalise_connections(connections, names)
    layout(done, links)
    body: dict[str, Any] = {"nodes": done, "connections": links, "settings": complete_settings(settings)}
    if name is not None:
        body["name"] = name
    return body


def complete_settings(settings: Any) -> dict[str, Any]:
    if settings is None:
        return dict(DEFAULT_SETTINGS)
    if not isinstance(settings, Mapping):
        raise WorkflowError("settings must be an object")
    extra = sorted(set(settings) - SETTINGS_KEYS)
    if extra:
        raise WorkflowError(f"settings has keys n8n does not accept: {', '.join(extra)} "
                            f"(allowed: {', '.join(sorted(SETTINGS_KEYS))})")
    return {**DEFAULT_SETTINGS, **settings}


# --------------------------------------------------------------------------- the real API's checks


def public_api_error(body: Any) -> str | None:
    """The 400 message n8n 2.41.1's public API gives for this create/update body, or None if it accepts it.

    Same order and wording as the real server: the OpenAPI request checks first (required fields,
    read-only and unknown keys, types), then n8n's workflow structure check (node name and position
    required, unique names, connections to existing nodes). Unknown node types are accepted, as n8n does."""
    if not isinstance(body, Mapping):
        return "request/body must be object"
    for key in ("name", "nodes", "settings"):
        if key not in body:
            return f"request/body must have required property '{key}'"
    if "connections" not in body:  # n8n 2.41.1 words this one differently
        return "request/body/connections must be object"
    for key in body:
        if key in WORKFLOW_READ_ONLY:
            return f"request/body/{key} is read-only"
    extra = [k for k in body if k not in WORKFLOW_WRITABLE]
    if extra:
        return f"request/body must NOT have additional properties ({extra[0]})"
    if not isinstance(body["name"], str):
        return "request/body/name must be string"
    if not isinstance(body["nodes"], list):
        return "request/body/nodes must be array"
    if not isinstance(body["connections"], Mapping):
        return "request/body/connections must be object"
    if not isinstance(body["settings"], Mapping):
        return "request/body/settings must be object"
    unknown_settings = [k for k in body["settings"] if k not in SETTINGS_KEYS]
    if unknown_settings:
        return f"request/body/settings Unrecognized key(s) in object: {', '.join(repr(k) for k in unknown_settings)}"
    for i, node in enumerate(body["nodes"]):
        if not isinstance(node, Mapping):
            return f"request/body/nodes/{i} must be object"
        extra = [k for k in node if k not in NODE_KEYS]
        if extra:
            return f"request/body/nodes/{i} Unrecognized key(s) in object: {', '.join(repr(k) for k in extra)}"
        if "typeVersion" in node and not _number(node["typeVersion"]):
            return f"request/body/nodes/{i}/typeVersion Expected number, received {_js_type(node['typeVersion'])}"
        position = node.get("position")
        if isinstance(position, list):
            for j, p in enumerate(position):
                if not _number(p):
                    return f"request/body/nodes/{i}/position/{j} Expected number, received {_js_type(p)}"
    problems: list[str] = []
    seen: set[str] = set()
    for i, node in enumerate(body["nodes"]):
        if not isinstance(node.get("name"), str):
            problems.append(f"nodes[{i}].name (invalid_type): Required")
        elif node["name"] in seen:
            problems.append(f"nodes[{i}].name (duplicate_node_name): Duplicate node name \"{node['name']}\"")
        else:
            seen.add(node["name"])
        if not isinstance(node.get("type"), str):
            problems.append(f"nodes[{i}].type (invalid_type): Required")
        if "position" not in node:
            problems.append(f"nodes[{i}].position (invalid_type): Required")
        elif not isinstance(node["position"], list) or len(node["position"]) != 2:
            problems.append(f"nodes[{i}].position (invalid_type): Expected array of two numbers")
    for source, kinds in body["connections"].items():
        if source not in seen:
            problems.append(f"connections.{source} (unknown_connection_source): Connection source \"{source}\" "
                            "does not reference an existing node")
        for kind, outputs in (kinds.items() if isinstance(kinds, Mapping) else []):
            for o, output in enumerate(outputs if isinstance(outputs, list) else []):
                for t, target in enumerate(output if isinstance(output, list) else []):
                    target_name = target.get("node") if isinstance(target, Mapping) else None
                    if target_name not in seen:
                        problems.append(f"connections.{source}.{kind}[{o}][{t}].node (unknown_connection_target): "
                                        f"Connection target \"{target_name}\" does not reference an existing node")
    if problems:
        return "Workflow structure is invalid. " + "; ".join(problems)
    return None


def activation_error(workflow: Mapping[str, Any], trigger_types: Iterable[str] | None = None) -> str | None:
    """n8n's 400 for activating a workflow without a trigger, webhook or polling node."""
    known = set(trigger_types) if trigger_types is not None else {n for n, v in node_table().items() if v[2]}
    known -= NOT_ACTIVATING
    nodes = workflow.get("nodes") or []
    if not any(isinstance(n, Mapping) and not n.get("disabled") and n.get("type") not in NOT_ACTIVATING
               and (n.get("type") in known or str(n.get("type", "")).endswith("Trigger")) for n in nodes):
        return ("Workflow cannot be activated because it has no trigger node. "
                "At least one trigger, webhook, or polling node is required.")
    return None


def _js_type(value: Any) -> str:
    if isinstance(value, str):
        return "string"
    if isinstance(value, bool):
        return "boolean"
    if value is None:
        return "null"
    if isinstance(value, list):
        return "array"
    return "object"
