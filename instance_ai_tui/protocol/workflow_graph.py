"""An n8n workflow as a graph the canvas draws: nodes, typed connections, and one execution's outcome.

``parse_workflow`` reads the workflow JSON of any source — n8n's public API (``GET /api/v1/workflows/:id``),
its REST API (``GET /rest/workflows/:id``, inside ``{"data": ...}``), the demo instance, or the nodes and
connections a create/update-workflow tool call carries — into frozen records. It is defensive: whatever the
source sends, the result is a valid graph (unknown shapes are skipped, connections to missing nodes dropped,
at most ``MAX_NODES`` nodes and ``MAX_EDGES`` connections), and every text that reaches a terminal has its
control and bidi characters made visible (``safe_text.visible``).

n8n's connection JSON is ``{source: {type: [[{node, type, index}], ...]}}``: the outer list is the source's
outputs by index (IF: 0 = true, 1 = false; Switch: one per rule, then the fallback), ``type`` is ``main`` or an
AI sub-connection (``ai_languageModel``, ``ai_memory``, ``ai_tool``, ...), and ``index`` the target's input.
In AI connections the *sub-node* (model, memory, tool) is the source and the agent the target.

``parse_execution`` reads an execution (public API with ``includeData=true``; REST, where ``data`` is a
``flatted`` string; or the demo's ``data.nodes``) into one ``NodeRun`` per node: ran, failed or not reached,
with the first output items and the error.
"""

from __future__ import annotations

import itertools
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeGuard

from .safe_text import visible, visible_data

MAX_NODES = 10_000
MAX_EDGES = 40_000
#: sticky notes kept (the author's own documentation, drawn as labelled regions)
MAX_STICKIES = 2_000
#: the longest node name kept (n8n allows long names; the canvas shows the first cells)
MAX_NAME = 200
#: output items kept per node run (the node details show the first ones)
MAX_ITEMS = 5


class NodeKind(StrEnum):
    TRIGGER = "trigger"
    ACTION = "action"
    AI = "ai"
    FLOW = "flow"


#: the glyph drawn before a node's name, per kind (the word is the short type under it)
KIND_GLYPH: dict[NodeKind, str] = {
    NodeKind.TRIGGER: "⚡",
    NodeKind.ACTION: "▪",
    NodeKind.AI: "✦",
    NodeKind.FLOW: "◇",
}

FLOW_TYPES = frozenset({
    "if", "switch", "merge", "splitInBatches", "filter", "wait", "noOp", "stopAndError", "compareDatasets",
    "splitOut", "aggregate", "removeDuplicates", "limit", "sort", "executeWorkflow", "respondToWebhook",
})
_NOT_TRIGGERS = frozenset({"n8n-nodes-base.respondToWebhook"})
#: nodes of the editor that are not steps of the workflow (sticky notes: drawn as regions, ``Sticky``)
NOT_DRAWN = frozenset({"n8n-nodes-base.stickyNote"})
STICKY_TYPE = "n8n-nodes-base.stickyNote"
_TRIGGER_TYPES = frozenset({"n8n-nodes-base.webhook", "n8n-nodes-base.formTrigger", "n8n-nodes-base.cron",
                            "n8n-nodes-base.interval", "n8n-nodes-base.start"})

#: AI connection types, in the order n8n shows their ports under an agent, with their short label
AI_LABELS: dict[str, str] = {
    "ai_languageModel": "model",
    "ai_memory": "memory",
    "ai_tool": "tool",
    "ai_outputParser": "parser",
    "ai_retriever": "retriever",
    "ai_reranker": "reranker",
    "ai_vectorStore": "vector",
    "ai_embedding": "embedding",
    "ai_document": "document",
    "ai_textSplitter": "splitter",
}


def connection_label(kind: str) -> str:
    """``ai_languageModel`` -> ``model``; unknown ``ai_*`` types -> the part after ``ai_``."""
    return AI_LABELS.get(kind) or kind.removeprefix("ai_")[:10]


def ai_order(kind: str) -> int:
    order = list(AI_LABELS)
    return order.index(kind) if kind in order else len(order)


def short_type(type_name: str) -> str:
    """``n8n-nodes-base.httpRequest`` -> ``httpRequest``; ``@n8n/n8n-nodes-langchain.agent`` -> ``agent``."""
    return type_name.rsplit(".", 1)[-1] if type_name else "?"


def node_kind(type_name: str) -> NodeKind:
    short = short_type(type_name)
    if type_name not in _NOT_TRIGGERS and (short.endswith("Trigger") or type_name in _TRIGGER_TYPES):
        return NodeKind.TRIGGER
    if type_name.startswith("@n8n/n8n-nodes-langchain."):
        return NodeKind.AI
    if short in FLOW_TYPES:
        return NodeKind.FLOW
    return NodeKind.ACTION


@dataclass(frozen=True, slots=True)
class WfNode:
    name: str
    type: str
    kind: NodeKind
    position: tuple[float, float] | None = None
    disabled: bool = False
    type_version: float | None = None
    parameters: Mapping[str, Any] = field(default_factory=dict)
    id: str = ""
    #: n8n's ``onError`` (``continueErrorOutput``: the node has an extra ``error`` output, its lowest)
    on_error: str = ""

    @property
    def error_output(self) -> bool:
        return self.on_error == "continueErrorOutput"

    @property
    def short_type(self) -> str:
        return short_type(self.type)

    @property
    def glyph(self) -> str:
        return KIND_GLYPH[self.kind]


@dataclass(frozen=True, slots=True)
class WfEdge:
    source: str
    target: str
    #: ``main`` or an AI connection type (``ai_tool``, ...)
    kind: str = "main"
    #: the source's output index and the target's input index
    output: int = 0
    input: int = 0
    #: the type of the target's input for a connection that is not AI (``main``, also for n8n's
    #: ``error`` kind); ``main`` for AI connections
    input_kind: str = field(default="main", compare=False)

    @property
    def is_main(self) -> bool:
        return self.kind == "main"

    @property
    def is_ai(self) -> bool:
        """A sub-node's connection (``ai_*``): drawn dotted from the sub-node's top to the consumer's port."""
        return self.kind.startswith("ai_")


@dataclass(frozen=True, slots=True)
class Sticky:
    """A sticky note of the editor: a rectangle (n8n's pixels) and the text on it."""

    position: tuple[float, float]
    width: float
    height: float
    content: str
    #: n8n's colour of the note, 1-7 (yellow, gold, red, green, blue, purple, grey; 1 when not one of them)
    color: int = 1

    @property
    def label(self) -> str:
        """The note's first heading, else its first line (markdown marks taken off)."""
        lines = [line.strip() for line in self.content.splitlines() if line.strip()]
        for line in lines:
            if line.startswith("#"):
                return line.lstrip("#").strip().strip("*_ ") or "note"
        first = lines[0] if lines else ""
        return first.strip("#*_> ").strip() or "note"

    @property
    def body(self) -> tuple[str, ...]:
        """The note's text after its label's line, as lines of plain text (markdown's marks, links' targets,
        images and HTML tags taken off; list items as ``•``; rules and empty lines left out); tabs as
        spaces. What the drawing writes inside the note's frame, as many lines as fit."""
        lines = [line.strip() for line in self.content.splitlines() if line.strip()]
        heading = next((k for k, line in enumerate(lines) if line.startswith("#")), 0)
        out: list[str] = []
        for line in lines[:heading] + lines[heading + 1:]:
            text = _markdown_line(line)
            if text:
                out.append(text)
            if len(out) >= MAX_NOTE_LINES:
                break
        return tuple(out)


#: lines of a sticky note's body kept for the drawing (a note taller than that is mostly empty frame)
MAX_NOTE_LINES = 40
_MD_IMAGE = re.compile(r"!\[([^\]]*)\]\([^)]*\)")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_MD_TAG = re.compile(r"<[^>]{0,200}>")
_MD_MARKS = re.compile(r"\*\*|__|~~|`|(?<![\w*])\*(?=\S)|(?<=\S)\*(?![\w*])|(?<!\w)_(?=\S)|(?<=\S)_(?!\w)")
_MD_RULE = re.compile(r"^([-*_=]\s*){3,}$")
_MD_ITEM = re.compile(r"^[-*+]\s+")
#: the line under a table's header: ``|---|:---:|``
_MD_TABLE_RULE = re.compile(r"^\|?(\s*:?-+:?\s*\|)+\s*(:?-+:?\s*)?$")


def _markdown_line(line: str) -> str:
    """One line of a note's markdown as plain text ("" for a rule or a line of marks only); a table's row
    as its cells two spaces apart (the line under its header left out)."""
    if _MD_RULE.match(line) or _MD_TABLE_RULE.match(line):
        return ""
    if line.startswith("|") and line.endswith("|") and len(line) > 1:
        cells = (_markdown_line(cell.strip()) for cell in line[1:-1].split("|"))
        return "  ".join(cell for cell in cells if cell)
    text = line.lstrip("#>").strip()
    text = _MD_ITEM.sub("• ", text)
    text = _MD_IMAGE.sub(lambda m: m.group(1), text)
    text = _MD_LINK.sub(lambda m: m.group(1), text)
    text = _MD_MARKS.sub("", _MD_TAG.sub("", text))
    return " ".join(text.replace("\t", " ").split())


@dataclass(frozen=True, slots=True)
class Workflow:
    id: str
    name: str
    nodes: tuple[WfNode, ...]
    edges: tuple[WfEdge, ...]
    active: bool = False
    stickies: tuple[Sticky, ...] = ()
    _index: dict[str, WfNode] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        self._index.clear()
        for n in self.nodes:
            self._index.setdefault(n.name, n)

    def node(self, name: str) -> WfNode | None:
        return self._index.get(name)

    def output_labels(self, name: str) -> dict[int, str]:
        """Branch labels of a node's main outputs (IF: true/false, Switch: its rules, loop: done/loop)."""
        node = self.node(name)
        return output_labels(node) if node is not None else {}


def _number(value: Any) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _text(value: Any, limit: int = MAX_NAME) -> str:
    return visible(value[:limit]) if isinstance(value, str) else ""


def unwrap(data: Any) -> Any:
    """n8n's REST wraps bodies in ``{"data": ...}``; the public API does not."""
    if isinstance(data, Mapping) and set(data) == {"data"} and isinstance(data["data"], Mapping):
        return data["data"]
    return data


def parse_workflow(data: Any, *, workflow_id: str = "") -> Workflow:
    """A ``Workflow`` from n8n's workflow JSON (whichever API sent it); never raises on odd shapes."""
    data = unwrap(data)
    if not isinstance(data, Mapping):
        return Workflow(workflow_id, "", (), ())
    nodes: list[WfNode] = []
    stickies: list[Sticky] = []
    seen: set[str] = set()
    raw_nodes = data.get("nodes")
    for raw in raw_nodes if isinstance(raw_nodes, list) else []:
        if len(nodes) >= MAX_NODES:
            break
        if not isinstance(raw, Mapping):
            continue
        type_name = _text(raw.get("type"))
        if type_name == STICKY_TYPE:
            sticky = _sticky(raw)
            if sticky is not None and len(stickies) < MAX_STICKIES:
                stickies.append(sticky)
            continue
        if not type_name or type_name in NOT_DRAWN:  # no type
            continue
        name = _text(raw.get("name")) or short_type(type_name)
        if not name or name in seen:
            continue
        seen.add(name)
        pos = raw.get("position")
        position = (float(pos[0]), float(pos[1])) if (isinstance(pos, list | tuple) and len(pos) == 2
                                                      and all(_number(p) for p in pos)) else None
        params = raw.get("parameters")
        version = raw.get("typeVersion")
        nodes.append(WfNode(name=name, type=type_name, kind=node_kind(type_name), position=position,
                            disabled=raw.get("disabled") is True,
                            type_version=float(version) if _number(version) else None,
                            parameters=params if isinstance(params, Mapping) else {},
                            id=_text(raw.get("id"), 64), on_error=_text(raw.get("onError"), 40)))
    edges = parse_connections(data.get("connections"), seen)
    wid = data.get("id")
    return Workflow(id=_text(wid, 64) if isinstance(wid, str) else (str(wid) if _number(wid) else workflow_id),
                    name=_text(data.get("name")), nodes=tuple(nodes), edges=tuple(edges),
                    active=data.get("active") is True, stickies=tuple(stickies))


def _sticky(raw: Mapping[str, Any]) -> Sticky | None:
    pos = raw.get("position")
    if not (isinstance(pos, list | tuple) and len(pos) == 2 and all(_number(p) for p in pos)):
        return None
    params = raw.get("parameters")
    params = params if isinstance(params, Mapping) else {}
    width, height = params.get("width"), params.get("height")
    content = params.get("content")
    return Sticky((float(pos[0]), float(pos[1])),
                  float(width) if _number(width) and 0 < width < 100_000 else 240.0,
                  float(height) if _number(height) and 0 < height < 100_000 else 160.0,
                  _text(content, 2_000) if isinstance(content, str) else "", _sticky_color(params.get("color")))


#: n8n's sticky note colours (its editor's ``--sticky--color--background--variant-N``), in the order of ``color``
STICKY_COLORS = ("yellow", "gold", "red", "green", "blue", "purple", "grey")


def _sticky_color(value: Any) -> int:
    """A note's ``color``: 1-7 (a number, or its digits as text); 1 (n8n's default, yellow) for anything else
    (a custom colour, nothing)."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    return value if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= len(STICKY_COLORS) else 1


def parse_connections(connections: Any, names: set[str]) -> list[WfEdge]:
    """n8n's connections (or the shorthand ``{source: [targets]}`` models write) as edges between ``names``."""
    edges: list[WfEdge] = []
    seen: set[WfEdge] = set()
    if not isinstance(connections, Mapping):
        return edges
    for source, kinds in connections.items():
        if not isinstance(source, str):
            continue
        source = visible(source[:MAX_NAME])
        if source not in names:
            continue
        if isinstance(kinds, str | list):  # shorthand: {"A": "B"} or {"A": ["B", "C"]}
            kinds = {"main": [kinds] if isinstance(kinds, str) or not any(isinstance(k, list) for k in kinds)
                     else kinds}
        if not isinstance(kinds, Mapping):
            continue
        for kind, outputs in kinds.items():
            if not isinstance(kind, str) or not isinstance(outputs, list):
                continue
            for output_index, output in enumerate(outputs):
                targets = output if isinstance(output, list) else [output] if output is not None else []
                for target in targets:
                    if isinstance(target, str):
                        target = {"node": target}
                    if not isinstance(target, Mapping) or not isinstance(target.get("node"), str):
                        continue
                    name = visible(target["node"][:MAX_NAME])
                    if name not in names:
                        continue
                    index = target.get("index")
                    into = target.get("type")
                    kind_text = visible(kind[:40])
                    edge = WfEdge(source, name, kind_text, output_index,
                                  int(index) if _number(index) and 0 <= index < 64 else 0,
                                  "main" if kind_text.startswith("ai_") or not isinstance(into, str)
                                  or into.startswith("ai_") else visible(into[:40]))
                    if edge not in seen:
                        seen.add(edge)
                        edges.append(edge)
                        if len(edges) >= MAX_EDGES:
                            return edges
    return edges


def output_labels(node: WfNode) -> dict[int, str]:
    """Labels of the main outputs the canvas writes on branches (none for single-output nodes): IF
    true/false, Switch its rules' keys (or their numbers) and fallback, the loop done/loop, a text
    classifier its categories, and ``error`` on the lowest output of a node set to continue on error."""
    labels = _branch_labels(node)
    if node.error_output:
        labels = {**labels, max(len(labels), 1) if labels else 1: "error"}
        if 0 not in labels:
            labels[0] = "success"
    return labels


def _branch_labels(node: WfNode) -> dict[int, str]:
    short, params = node.short_type, node.parameters
    if short == "if":
        return {0: "true", 1: "false"}
    if short == "filter" and isinstance(params.get("options"), Mapping) and params["options"].get("allowDiscarded"):
        return {0: "kept", 1: "discarded"}
    if short == "splitInBatches" and (node.type_version or 1) >= 3:
        return {0: "done", 1: "loop"}
    if short == "switch":
        return _switch_labels(params)
    if short == "textClassifier":
        cats = params.get("categories")
        values = cats.get("categories") if isinstance(cats, Mapping) else None
        return {i: _text(c.get("category"), 40) or str(i) for i, c in enumerate(values)
                if isinstance(c, Mapping)} if isinstance(values, list) else {}
    if short == "compareDatasets":
        return {0: "A only", 1: "same", 2: "different", 3: "B only"}
    return {}


def _switch_labels(params: Mapping[str, Any]) -> dict[int, str]:
    labels: dict[int, str] = {}
    rules = params.get("rules")
    options = params.get("options")
    options = options if isinstance(options, Mapping) else {}
    values = rules.get("values") if isinstance(rules, Mapping) else None
    if isinstance(values, list):  # Switch v3: rules.values[], renamed outputs have an outputKey
        for i, rule in enumerate(values):
            key = rule.get("outputKey") if isinstance(rule, Mapping) and rule.get("renameOutput") is not False else None
            labels[i] = _text(key, 40) if isinstance(key, str) and key else str(i)
        if options.get("fallbackOutput") == "extra":
            labels[len(values)] = "fallback"
        return labels
    old = rules.get("rules") if isinstance(rules, Mapping) else None
    if isinstance(old, list):  # Switch v1/v2: rules.rules[] with an output number each
        for rule in old:
            out = rule.get("output") if isinstance(rule, Mapping) else None
            if _number(out) and 0 <= out < 64:
                labels.setdefault(int(out), str(int(out)))
        fallback = params.get("fallbackOutput")
        if _number(fallback) and 0 <= fallback < 64:
            labels[int(fallback)] = "fallback"
        return labels
    count = params.get("numberOutputs")  # expression mode
    if _number(count) and 0 < count <= 64:
        return {i: str(i) for i in range(int(count))}
    return labels


def input_count(node: WfNode) -> int:
    """How many main inputs n8n draws on the node (Merge: 2, or its ``numberInputs``; else 1). The
    canvas adds any input a connection uses beyond these."""
    if node.short_type in ("merge", "compareDatasets"):
        wanted = node.parameters.get("numberInputs")
        return int(wanted) if _number(wanted) and 2 <= wanted <= 16 else 2
    return 1


def node_subtitle(node: WfNode) -> str:
    """The line n8n writes under a node's name: ``POST: https://…`` (HTTP), ``mode: Rules`` (Switch),
    ``create: contact`` (resource and operation), else ``""``."""
    params, short = node.parameters, node.short_type
    def text(key: str) -> str:
        value = params.get(key)
        if isinstance(value, Mapping):  # resource locators: {"__rl": true, "value": ..., "cachedResultName": ...}
            value = value.get("cachedResultName") or value.get("value")
        return _text(value, 120).lstrip("=") if isinstance(value, str) else ""
    if short == "httpRequest" or short == "toolHttpRequest":
        url = text("url")
        return f"{text('method') or 'GET'}: {url}" if url else ""
    if short == "switch":
        mode = text("mode") or "rules"
        return f"mode: {mode[:1].upper()}{mode[1:]}"
    if short == "webhook":
        path = text("path")
        return f"{text('httpMethod') or 'GET'}: /{path}" if path else ""
    operation, resource = text("operation"), text("resource")
    if operation and resource:
        return f"{operation}: {resource}"
    if operation:
        return operation
    if short in ("lmChatOpenAi", "lmChatAnthropic", "lmChatGoogleGemini", "lmChatOllama", "lmOpenAi"):
        model = text("model") or text("modelName")
        return model
    return ""


# --------------------------------------------------------------------------- what changed


def changed_nodes(before: Workflow | None, after: Workflow) -> tuple[frozenset[str], frozenset[str]]:
    """``(added, changed)`` node names of ``after`` against ``before`` (type, parameters, disabled,
    or its outgoing connections differ)."""
    if before is None:
        return frozenset(n.name for n in after.nodes), frozenset()
    old = {n.name: n for n in before.nodes}
    old_out: dict[str, set[WfEdge]] = {}
    for e in before.edges:
        old_out.setdefault(e.source, set()).add(e)
    new_out: dict[str, set[WfEdge]] = {}
    for e in after.edges:
        new_out.setdefault(e.source, set()).add(e)
    added, changed = set(), set()
    for node in after.nodes:
        prev = old.get(node.name)
        if prev is None:
            added.add(node.name)
        elif (prev.type != node.type or prev.disabled != node.disabled or _canon(prev.parameters) != _canon(node.parameters)
              or old_out.get(node.name, set()) != new_out.get(node.name, set())):
            changed.add(node.name)
    return frozenset(added), frozenset(changed)


def _canon(value: Any) -> str:
    try:
        return json.dumps(value, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


# --------------------------------------------------------------------------- executions


class RunState(StrEnum):
    RAN = "ran"
    FAILED = "failed"
    NOT_REACHED = "not reached"
    RUNNING = "running"


#: glyph + word for each state (never colour alone)
RUN_GLYPH: dict[RunState, str] = {
    RunState.RAN: "✓",
    RunState.FAILED: "✗",
    RunState.NOT_REACHED: "○",
    RunState.RUNNING: "◐",
}


@dataclass(frozen=True, slots=True)
class NodeRun:
    state: RunState
    #: output items, summed over every run of the node (a node in a loop runs once per pass)
    items: int = 0
    error: str = ""
    #: the first output items (their ``json``), made safe for a terminal
    output: tuple[Any, ...] = ()
    #: how many times the node ran in the execution
    runs: int = 1
    #: items per main output, summed over the runs (what each connection carried)
    items_by_output: tuple[int, ...] = ()

    @property
    def label(self) -> str:
        items = f"{self.items} item{'s' if self.items != 1 else ''}"
        if self.state is RunState.RAN:
            return f"{self.runs} runs · {items}" if self.runs > 1 else f"ran · {items}"
        if self.state is RunState.FAILED and self.runs > 1:
            return f"failed · {self.runs} runs"
        return self.state.value


@dataclass(frozen=True, slots=True)
class ExecutionView:
    id: str
    status: str
    runs: Mapping[str, NodeRun]
    error: str = ""

    def run(self, name: str) -> NodeRun:
        return self.runs.get(name) or NodeRun(RunState.NOT_REACHED)


def unflatten(text: str) -> Any:
    """Decode the ``flatted`` format n8n's REST uses for execution data: a JSON list whose first
    entry is the root, where each string that is a list index points at that entry (so objects
    can repeat and cycle). Cycles are cut (a repeated ancestor becomes ``None``)."""
    table = json.loads(text)
    if not isinstance(table, list) or not table:
        return table
    # strings in the table are references; the plain strings are the entries they point at
    def resolve(value: Any, ancestors: tuple[int, ...], depth: int) -> Any:
        if depth > 64:
            return None
        if isinstance(value, str) and value.isdigit():
            index = int(value)
            if index >= len(table) or index in ancestors:
                return None
            entry = table[index]
            if isinstance(entry, str):
                return entry
            return resolve_container(entry, (*ancestors, index), depth + 1)
        return value

    def resolve_container(value: Any, ancestors: tuple[int, ...], depth: int) -> Any:
        if isinstance(value, list):
            return [resolve(v, ancestors, depth) for v in value]
        if isinstance(value, dict):
            return {k: resolve(v, ancestors, depth) for k, v in value.items()}
        return value

    return resolve_container(table[0], (0,), 0)


def _error_text(error: Any) -> str:
    if isinstance(error, Mapping):
        parts = [error.get("message"), error.get("description")]
        return visible("; ".join(str(p) for p in parts if isinstance(p, str) and p)[:500]) or "error"
    if isinstance(error, str):
        return visible(error[:500])
    return "error" if error else ""


def parse_execution(data: Any) -> ExecutionView | None:
    """One execution's per-node outcome, or ``None`` when ``data`` is not an execution."""
    data = unwrap(data)
    if not isinstance(data, Mapping):
        return None
    exec_id = str(data.get("id") or "")
    status = str(data.get("status") or ("error" if data.get("finished") is False else "success"))
    body = data.get("data")
    if isinstance(body, str):
        try:
            body = unflatten(body)
        except (ValueError, RecursionError):
            body = None
    runs: dict[str, NodeRun] = {}
    error = ""
    if isinstance(body, Mapping) and isinstance(body.get("resultData"), Mapping):
        result = body["resultData"]
        error = _error_text(result.get("error"))
        run_data = result.get("runData")
        for name, node_runs in (run_data.items() if isinstance(run_data, Mapping) else ()):
            if not isinstance(name, str) or not isinstance(node_runs, list) or not node_runs:
                continue
            runs[visible(name[:MAX_NAME])] = _node_run(node_runs)
        last = result.get("lastNodeExecuted")
        if error and isinstance(last, str) and visible(last) in runs and runs[visible(last)].state is not RunState.FAILED:
            run = runs[visible(last)]
            runs[visible(last)] = NodeRun(RunState.FAILED, run.items, error, run.output)
    elif isinstance(body, Mapping) and isinstance(body.get("nodes"), Mapping):  # the demo instance
        for name, info in body["nodes"].items():
            if not isinstance(info, Mapping) or not isinstance(name, str):
                continue
            failed = info.get("status") == "error"
            count = info.get("items")
            items = int(count) if _number(count) else 0
            runs[visible(name[:MAX_NAME])] = NodeRun(RunState.FAILED if failed else RunState.RAN, items,
                                                      _error_text(info.get("error")) if failed else "")
    return ExecutionView(visible(exec_id[:64]), visible(status[:32]), runs, error)


def _node_run(node_runs: list[Any]) -> NodeRun:
    """One node's outcome over all its runs (n8n keeps one entry per run: a loop's nodes have several):
    the run count, items per output summed, the first items, and the error of a failed run."""
    by_output: list[int] = []
    first: list[Any] = []
    error: Any = None
    failed = False
    runs = [r for r in node_runs if isinstance(r, Mapping)]
    for run in runs:
        output = run.get("data")
        main = output.get("main") if isinstance(output, Mapping) else None
        for index, branch in enumerate(main if isinstance(main, list) else []):
            if index >= 64:
                break
            count = len(branch) if isinstance(branch, list) else 0
            while len(by_output) <= index:
                by_output.append(0)
            by_output[index] += count
            if len(first) < MAX_ITEMS and isinstance(branch, list):
                first += [item.get("json") if isinstance(item, Mapping) else item
                          for item in branch[:MAX_ITEMS - len(first)]]
        if run.get("error") or run.get("executionStatus") == "error":
            failed, error = True, run.get("error")
    total = sum(by_output)
    count = max(1, len(runs))
    last = runs[-1] if runs else {}
    output = tuple(visible_data(first))
    if failed:
        return NodeRun(RunState.FAILED, total, _error_text(error) or "failed", output, count, tuple(by_output))
    if last.get("executionStatus") == "running":
        return NodeRun(RunState.RUNNING, total, runs=count, items_by_output=tuple(by_output))
    return NodeRun(RunState.RAN, total, "", output, count, tuple(by_output))


# --------------------------------------------------------------------------- from a tool call


_ID_KEYS = ("workflowId", "workflow_id", "id")


def workflow_id_of(*values: Any) -> str | None:
    """The workflow id a workflow tool call names: its result's ``id``/``workflowId`` (a create),
    else its arguments' ``workflowId``. Text results are searched for ``"id": "..."``."""
    for value in values:
        if isinstance(value, str):
            stripped = value.strip()
            if stripped.startswith("{"):
                try:
                    value = json.loads(stripped)
                except ValueError:
                    match = re.search(r'"(?:workflowId|id)"\s*:\s*"([^"]{1,64})"', stripped)
                    if match:
                        return match.group(1)
                    continue
        if isinstance(value, Mapping):
            for key in _ID_KEYS:
                found = value.get(key)
                if isinstance(found, str | int) and not isinstance(found, bool) and str(found).strip():
                    return str(found).strip()[:64]
            for inner in ("workflow", "data"):
                nested = value.get(inner)
                if isinstance(nested, Mapping):
                    found_id = workflow_id_of(nested)
                    if found_id:
                        return found_id
    return None


#: tool names (ours, and n8n's agent's) whose call creates or changes a workflow
WORKFLOW_WRITE_TOOLS = frozenset({"create-workflow", "update-workflow", "build-workflow", "build_workflow",
                                  "build-workflow-with-agent", "submit-workflow", "restore-workflow-version"})
#: tools whose call only reads a workflow or runs it (the canvas follows them too)
WORKFLOW_READ_TOOLS = frozenset({"get-workflow", "run-workflow", "activate-workflow", "deactivate-workflow",
                                 "get-execution", "verify-built-workflow"})


def is_workflow_tool(tool_name: str, args: Mapping[str, Any] | None = None) -> bool:
    """Whether a call of ``tool_name`` is about one workflow (n8n's ``workflows`` tool by its action)."""
    if tool_name in WORKFLOW_WRITE_TOOLS or tool_name in WORKFLOW_READ_TOOLS:
        return True
    if tool_name in ("workflows", "executions") and isinstance(args, Mapping):
        return args.get("action") in ("get", "update", "get-json", "validate", "restore-version", "update-version",
                                      "publish", "setup", "run", "get", "debug")
    return False


def preview_from_args(args: Mapping[str, Any], name: str = "") -> Workflow | None:
    """What a create/update call's arguments describe, before the tool answers (nodes without
    positions are laid out by the canvas)."""
    nodes = args.get("nodes")
    if not isinstance(nodes, list) or not nodes:
        return None
    data = {"name": args.get("name") or name, "nodes": nodes, "connections": args.get("connections")}
    if args.get("connections") is None:
        valid = [n for n in nodes if isinstance(n, Mapping)]
        names = [(_text(n.get("name")) or short_type(_text(n.get("type")))) for n in valid]
        data["connections"] = {a: [b] for a, b in itertools.pairwise(names)}
    return parse_workflow(data)


def node_names(nodes: Iterable[WfNode]) -> list[str]:
    return [n.name for n in nodes]
