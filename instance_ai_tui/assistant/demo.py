"""The offline demo model: deterministic, no network, and it reacts to what the user typed.

It is a ``ScriptedModel`` driven by a policy: each model call looks at the conversation (the
user's last message and the tool calls and results since) and decides the next step, exactly
as a real model would. For a build request ("every morning send the weather to Slack") the
orchestrator runs the seed's autonomous loop::

    reasoning -> plan -> delegate(workflow builder: list-nodes -> create-workflow -> summary)
    -> plan update -> activate-workflow (needs approval) -> plan update -> final markdown

A vague build request first asks the user (``ask-user``); "list workflows" lists them; "show
files" lists the workspace; "write a note ..." writes a file (with approval); a greeting or a
short question gets a short answer without tools. Everything derives from the input, so two
different requests give two different runs.

Token usage: the demo reports estimated counts computed from the actual text of each call
(about four characters per token of the prompt and of the answer, ``ScriptedModel``'s estimate),
and no cost (it has no price). They are shown as such; nothing is billed.
"""

from __future__ import annotations

import json
import re
import uuid
from dataclasses import dataclass, field
from typing import Any

from ..runtime.model import ModelRequest, content_text
from ..runtime.scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall

DEMO_LABEL = "demo (offline)"

#: keyword -> (node type, display name); order decides the workflow's node order within a group
_TRIGGERS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("webhook", "http request comes", "form submission", "when a request"), "n8n-nodes-base.webhook", "Webhook"),
    (("every", "daily", "morning", "hourly", "weekly", "schedule", "each day", "at 8", "at 9", "evening", "night"),
     "n8n-nodes-base.scheduleTrigger", "Schedule"),
)
_SOURCES: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("weather", "forecast", "temperature"), "n8n-nodes-base.openWeatherMap", "Weather"),
    (("rss", "news", "feed", "headlines"), "n8n-nodes-base.rssFeedRead", "RSS"),
    (("sheet", "spreadsheet"), "n8n-nodes-base.googleSheets", "Google Sheets"),
    (("http", "api", "fetch", "endpoint"), "n8n-nodes-base.httpRequest", "HTTP"),
)
_DESTINATIONS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("slack",), "n8n-nodes-base.slack", "Slack"),
    (("email", "gmail", "mail"), "n8n-nodes-base.gmail", "Email"),
    (("telegram",), "n8n-nodes-base.telegram", "Telegram"),
    (("discord",), "n8n-nodes-base.discord", "Discord"),
    (("teams",), "n8n-nodes-base.microsoftTeams", "Microsoft Teams"),
    (("mattermost",), "n8n-nodes-base.mattermost", "Mattermost"),
)
#: every node type the demo model may build with (the demo instance's catalogue holds each one)
DEMO_NODE_TYPES: frozenset[str] = frozenset(
    {"n8n-nodes-base.manualTrigger"} | {node for table in (_TRIGGERS, _SOURCES, _DESTINATIONS) for _w, node, _l in table})
#: a destination the person named in their own words that the demo has no node for: an HTTP
#: request labelled with their words (the demo never builds something else than was asked)
_OWN_WORDS_NODE = "n8n-nodes-base.httpRequest"
_BUILD_WORDS = ("build", "create", "make", "automate", "set up", "setup", "workflow", "send", "post", "notify", "every")
_GREETINGS = ("hello", "hi", "hey", "thanks", "thank you", "good morning", "good evening", "yo", "hallo", "hej")
_QUESTION_TRIGGER = "Which trigger should start the workflow?"
_QUESTION_DESTINATION = "Where should the result go?"


# --------------------------------------------------------------------------- reading the conversation


@dataclass(slots=True)
class Step:
    """A tool call of the current turn and what came back."""

    name: str
    args: dict[str, Any]
    result: str | None = None

    def result_json(self) -> Any:
        if self.result is None:
            return None
        try:
            return json.loads(self.result)
        except ValueError:
            return self.result

    @property
    def failed(self) -> bool:
        """The runtime shows failed and denied calls to the model as "Error: ..."."""
        return (self.result or "").lstrip().lower().startswith("error")


@dataclass(slots=True)
class Turn:
    system: str
    user_text: str
    steps: list[Step] = field(default_factory=list)
    tools: list[str] = field(default_factory=list)

    def calls(self, name: str) -> list[Step]:
        return [s for s in self.steps if s.name == name]


def read_turn(request: ModelRequest) -> Turn:
    messages = request.messages
    system = "\n".join(content_text(m.get("content")) for m in messages if m.get("role") == "system")
    last_user = max((i for i, m in enumerate(messages) if m.get("role") == "user"), default=-1)
    user_text = content_text(messages[last_user].get("content")) if last_user >= 0 else ""
    steps: list[Step] = []
    by_id: dict[str, Step] = {}
    for m in messages[last_user + 1 :]:
        if m.get("role") == "assistant":
            for call in m.get("tool_calls") or []:
                fn = call.get("function", {})
                try:
                    args = json.loads(fn.get("arguments") or "{}")
                except ValueError:
                    args = {}
                step = Step(fn.get("name", ""), args if isinstance(args, dict) else {})
                steps.append(step)
                by_id[call.get("id", "")] = step
        elif m.get("role") == "tool":
            answered = by_id.get(m.get("tool_call_id", ""))
            if answered is not None:
                answered.result = content_text(m.get("content"))
    return Turn(system=system, user_text=user_text.strip(), steps=steps, tools=request.tool_names())


# --------------------------------------------------------------------------- understanding the request


@dataclass(slots=True)
class Goal:
    name: str
    trigger: tuple[str, str] | None
    sources: list[tuple[str, str]]
    destinations: list[tuple[str, str]]

    @property
    def node_types(self) -> list[str]:
        trigger = self.trigger or ("n8n-nodes-base.manualTrigger", "Manual")
        return [trigger[0], *(s[0] for s in self.sources), *(d[0] for d in self.destinations)]

    @property
    def node_specs(self) -> list[str]:
        """The nodes for the builder's brief: the type, and the name when it is the person's own
        words (a destination the demo has no node for)."""
        specs = self.node_types[: 1 + len(self.sources)]
        for node_type, label in self.destinations:
            own = node_type == _OWN_WORDS_NODE and label.startswith("Send to ")
            specs.append(f'{node_type} "{_brief_safe(label)}"' if own else node_type)
        return specs

    @property
    def vague(self) -> bool:
        return not self.sources and not self.destinations


def _brief_safe(label: str) -> str:
    """A label that cannot end the builder brief's list or quote early."""
    return re.sub(r'[\[\]",]', " ", label).strip()


def _match(text: str, table: tuple[tuple[tuple[str, ...], str, str], ...]) -> list[tuple[str, str]]:
    return [(node, label) for words, node, label in table if any(re.search(rf"\b{re.escape(w)}", text) for w in words)]


def understand(text: str) -> Goal:
    low = text.lower()
    triggers = _match(low, _TRIGGERS)
    sources = _match(low, _SOURCES)
    destinations = _match(low, _DESTINATIONS)
    quoted = re.search(r"[\"“']([^\"”']{3,60})[\"”']", text) or re.search(
        r"\b(?:called|named)\s+([A-Za-z0-9][\w \-]{2,50})", text
    )
    if quoted:
        name = quoted.group(1).strip()
    else:
        parts = [label for _, label in sources] or ["Data"]
        name = " + ".join(parts) + (" to " + " + ".join(label for _, label in destinations) if destinations else " workflow")
    return Goal(name=name, trigger=triggers[0] if triggers else None, sources=sources, destinations=destinations)


def apply_answers(goal: Goal, answers_text: str, by_question: dict[str, str] | None = None) -> Goal:
    """Fold the user's ask-user answers into the goal. A destination answered in free text that
    names no service the demo knows is kept in the person's own words (a labelled HTTP request)."""
    low = answers_text.lower()
    trigger = goal.trigger or next(iter(_match(low, _TRIGGERS)), None)
    if trigger is None and "webhook" in low:
        trigger = ("n8n-nodes-base.webhook", "Webhook")
    destinations = goal.destinations or _match(low, _DESTINATIONS)
    own = " ".join((by_question or {}).get("destination", "").split())
    if not destinations and own and own not in ("(skipped)", "(no answer)"):
        destinations = [(_OWN_WORDS_NODE, f"Send to {own[:40]}")]
    sources = goal.sources or _match(low, _SOURCES) or [("n8n-nodes-base.httpRequest", "HTTP")]
    name = goal.name
    if name.startswith("Data"):
        name = understand(" ".join(label for _, label in sources) + " " + " ".join(label for _, label in destinations)).name
    return Goal(name=name, trigger=trigger, sources=sources, destinations=destinations)


def classify(text: str) -> str:
    low = text.lower().strip()
    words = re.findall(r"[\w']+", low)
    if not words:
        return "greeting"
    if any(w in words for w in ("delete", "remove", "archive", "trash")) and ("workflow" in low or _quoted(text)):
        return "delete-workflow"
    if "workflow" in low and any(w in words for w in ("list", "show", "which", "what")) and not _match(low, _DESTINATIONS):
        return "list-workflows"
    if any(w in words for w in ("file", "files", "folder", "workspace", "directory")) and not any(
        w in words for w in ("write", "save", "note")
    ):
        return "files"
    if any(w in words for w in ("write", "save")) and any(w in words for w in ("note", "file", "notes")):
        return "write-note"
    if len(words) <= 4 and any(low.startswith(g) for g in _GREETINGS):
        return "greeting"
    building = any(w in low for w in _BUILD_WORDS) or bool(_match(low, _SOURCES) or _match(low, _DESTINATIONS))
    if low.endswith("?") and not building:
        return "question"
    if building:
        return "build"
    return "question" if len(words) <= 8 else "build"


# --------------------------------------------------------------------------- responses


def _call(name: str, args: dict[str, Any], *, text: str = "", reasoning: str = "") -> ScriptedResponse:
    call_id = f"call_{uuid.uuid4().hex[:16]}"  # unique across runs and restarts
    return ScriptedResponse(text=text, reasoning=reasoning, tool_calls=[ScriptedToolCall(name, args, call_id)])


def _tasks(statuses: list[str], goal: Goal, *, activate: bool) -> list[dict[str, str]]:
    descriptions = [f"Find the nodes for {goal.name}", f"Build the workflow \"{goal.name}\""]
    if activate:
        descriptions.append("Activate it (needs your approval)")
    return [{"id": f"t{i + 1}", "description": d, "status": s} for i, (d, s) in enumerate(zip(descriptions, statuses, strict=False))]


def _quoted(text: str) -> str | None:
    match = re.search(r"[\"“']([^\"”']{2,60})[\"”']", text)
    return match.group(1).strip() if match else None


def _title_source(text: str) -> str:
    """The user's own words of a title request (``generate_title`` wraps them in "User message:\n…
    \n\nAssistant reply:\n…"; that scaffolding is not what the user said)."""
    match = re.search(r"User message:\s*\n(.*?)(?:\n\nAssistant reply:|\Z)", text, re.S)
    return match.group(1).strip() if match else text


def _title_for(text: str) -> str:
    """A build's workflow name when the request names what it connects; else the person's own
    first words (a vague request's "Data workflow" titled six threads alike)."""
    text = _title_source(text)
    kind = classify(text)
    if kind == "build" and not understand(text).vague:
        return understand(text).name[:50]
    words = re.findall(r"[\w']+", text)
    return " ".join(words[:6]).capitalize() or "New conversation"


def respond(request: ModelRequest) -> ScriptedResponse:
    """The next response of the demo model for ``request``."""
    turn = read_turn(request)
    if not turn.tools and "title" in turn.system.lower():
        return ScriptedResponse(text=json.dumps({"title": _title_for(turn.user_text)}))
    if "create-workflow" in turn.tools and "delegate" not in turn.tools:
        return _builder(turn)
    return _orchestrator(turn)


def _orchestrator(turn: Turn) -> ScriptedResponse:
    kind = classify(turn.user_text)
    if kind == "greeting":
        return ScriptedResponse(
            text="Hello! I'm the offline demo of Instance AI. Ask me to build a workflow — for example "
            "*\"every morning send the weather to Slack\"* — or to **list workflows** or **show files**."
        )
    if kind == "question":
        return _answer_question(turn)
    if kind == "list-workflows" and "list-workflows" in turn.tools:
        return _list_workflows(turn)
    if kind == "delete-workflow" and "list-workflows" in turn.tools:
        return _delete_workflow(turn)
    if kind == "files" and "list-files" in turn.tools:
        return _show_files(turn)
    if kind == "files":
        return ScriptedResponse(text=(
            "I can't see any of your files: no folder is shared with me. Start me with a folder to share, "
            "for example `instance-ai --demo --workspace ~/projects/notes` (or set `INSTANCE_AI_WORKSPACE`), "
            "and I can list, read and — with your approval — write files in it."))
    if kind == "write-note" and "write-file" in turn.tools:
        return _write_note(turn)
    return _build(turn)


def _answer_question(turn: Turn) -> ScriptedResponse:
    low = turn.user_text.lower()
    if "what can you" in low or "help" in low:
        text = ("I can plan and build n8n workflows with a builder sub-agent, list and activate workflows, "
                "and read or write files in your workspace — always asking before anything risky.")
    elif "n8n" in low:
        text = "n8n is a workflow automation tool: a workflow is a chain of nodes that starts with a trigger."
    else:
        topic = turn.user_text.rstrip("?").strip()
        text = (f"Good question about *{topic}*. I'm the offline demo model, so I can't look that up — "
                "but I can show the whole agent loop: try *\"build a workflow that posts RSS news to Telegram\"*.")
    return ScriptedResponse(reasoning="This is a question, not a task, so I'll answer briefly without tools.", text=text)


def _list_workflows(turn: Turn) -> ScriptedResponse:
    steps = turn.calls("list-workflows")
    if not steps:
        return _call("list-workflows", {}, reasoning="The user wants to see their workflows. Let me look them up.")
    rows = steps[-1].result_json()
    if not isinstance(rows, list):
        return ScriptedResponse(text=f"I could not list the workflows: {steps[-1].result}")
    lines = [f"You have {len(rows)} workflow{'s' if len(rows) != 1 else ''}:\n"]
    for row in rows:
        if isinstance(row, dict):
            state = "🟢 active" if row.get("active") else "⚪ inactive"
            lines.append(f"- **{row.get('name')}** (`{row.get('id')}`) — {state}")
    return ScriptedResponse(text="\n".join(lines))


def _delete_workflow(turn: Turn) -> ScriptedResponse:
    """'delete the Alpha workflow': find it by name, then delete it (a destructive approval)."""
    text = turn.user_text
    wanted = (_quoted(text) or re.sub(r"(?i)\b(please|delete|remove|archive|trash|the|my|workflow|workflows|called|"
                                      r"named)\b", " ", text)).strip(" .!?")
    listing = turn.calls("list-workflows")
    if not listing:
        return _call("list-workflows", {"name": wanted} if wanted else {},
                     reasoning=f"Looking for the workflow \"{wanted}\" before deleting anything.")
    rows = [r for r in listing[-1].result_json() or [] if isinstance(r, dict)] \
        if isinstance(listing[-1].result_json(), list) else []
    if not rows:
        return ScriptedResponse(text=f"I found no workflow matching **{wanted or text}**, so I deleted nothing.")
    if len(rows) > 1:
        names = ", ".join(f"**{r.get('name')}** (`{r.get('id')}`)" for r in rows)
        return ScriptedResponse(text=f"Several workflows match \"{wanted}\": {names}. Which one should I delete?")
    target = rows[0]
    deletes = turn.calls("delete-workflow")
    if not deletes:
        return _call("delete-workflow", {"workflowId": target["id"]},
                     reasoning=f"Deleting **{target.get('name')}** cannot be undone, so this asks you first.")
    if deletes[-1].failed:
        reason = (deletes[-1].result or "").removeprefix("Error:").strip()
        return ScriptedResponse(text=f"I did not delete **{target.get('name')}**: {reason}")
    return ScriptedResponse(text=f"Deleted **{target.get('name')}** (`{target['id']}`).")


def _show_files(turn: Turn) -> ScriptedResponse:
    steps = turn.calls("list-files")
    if not steps:
        return _call("list-files", {"path": ".", "recursive": True}, reasoning="Let me list the workspace folder.")
    listing = steps[-1].result_json()
    if not isinstance(listing, dict):
        return ScriptedResponse(text=f"I could not list the workspace: {steps[-1].result}")
    entries = listing.get("entries", [])
    files = [e for e in entries if e.get("type") == "file"]
    readable = next((e["path"] for e in files if str(e.get("path", "")).endswith((".md", ".txt", ".json", ".py"))), None)
    reads = turn.calls("read-file")
    if readable and not reads:
        return _call("read-file", {"path": readable, "maxLines": 20}, reasoning=f"{readable} looks informative; reading it.")
    lines = [f"The workspace has {len(files)} file{'s' if len(files) != 1 else ''}:\n"]
    lines += [f"- `{e['path']}`" for e in entries[:30]]
    if reads and reads[-1].result:
        content = reads[-1].result_json()
        first = (content.get("content", "") if isinstance(content, dict) else str(content)).strip().splitlines()
        if first:
            lines.append(f"\n`{reads[-1].args.get('path')}` starts with: *{first[0][:80]}*")
    return ScriptedResponse(text="\n".join(lines))


def _write_note(turn: Turn) -> ScriptedResponse:
    steps = turn.calls("write-file")
    if not steps:
        body = re.sub(r"(?i)^.*?\b(?:note|notes)\b[:\s]*", "", turn.user_text).strip() or turn.user_text
        return _call("write-file", {"path": "notes/instance-ai-note.md", "content": f"# Note\n\n{body}\n"},
                     reasoning="Writing a note changes the workspace, so this will ask for approval.")
    step = steps[-1]
    if step.failed:
        return ScriptedResponse(text=f"I did not write the note: {step.result}")
    return ScriptedResponse(text=f"Saved the note to `{step.args.get('path')}`.")


def _build(turn: Turn) -> ScriptedResponse:
    goal = understand(turn.user_text)
    asked = turn.calls("ask-user")
    if goal.vague and "ask-user" in turn.tools and not asked:
        return _call("ask-user", {
            "introMessage": "A couple of details before I build this:",
            "questions": [
                {"id": "trigger", "question": _QUESTION_TRIGGER, "type": "single",
                 "options": ["Every morning", "Webhook", "Manually"]},
                {"id": "destination", "question": _QUESTION_DESTINATION, "type": "single",
                 "options": ["Slack", "Email", "Telegram"]},
            ],
        }, reasoning="The request does not say what the workflow should connect, so I'll ask.")
    if asked and asked[-1].result:
        goal = apply_answers(goal, _answer_text(asked[-1]), _answers_by_question(asked[-1]))
    can_activate = "activate-workflow" in turn.tools and goal.trigger is not None
    plans = turn.calls("plan")
    delegates = turn.calls("delegate")
    if not plans:
        services = ", ".join(label for _, label in goal.sources + goal.destinations) or "the requested services"
        return _call(
            "plan",
            {"action": "create", "goal": goal.name, "tasks": _tasks(["in_progress", "pending", "pending"], goal, activate=can_activate)},
            reasoning=f"The user wants a workflow \"{goal.name}\" that uses {services}. "
            "I'll plan it, let a builder sub-agent create it, then activate it.",
        )
    if not delegates:
        nodes = ", ".join(goal.node_specs)
        return _call("delegate", {
            "role": "workflow builder",
            "instructions": f"Build a workflow named \"{goal.name}\" with these nodes in order: [{nodes}]. "
            "Check the node catalogue first, then create the workflow and report its id.",
            "tools": [t for t in ("list-nodes", "create-workflow", "get-workflow") if t in turn.tools or t == "list-nodes"],
        })
    delegated = delegates[-1]
    workflow_id = _workflow_id(delegated.result or "")
    if workflow_id is None:
        if len(plans) == 1:  # the checklist ends with the run: nothing stays "in progress"
            return _call("plan", {"action": "update",
                                  "tasks": _tasks(["failed", "failed", "cancelled"], goal, activate=can_activate)})
        return ScriptedResponse(text=f"The builder could not create the workflow: {delegated.result}")
    if len(plans) == 1:
        return _call("plan", {"action": "update", "tasks": _tasks(["completed", "completed", "in_progress"], goal, activate=can_activate)})
    activations = turn.calls("activate-workflow")
    if can_activate and not activations:
        return _call("activate-workflow", {"workflowId": workflow_id},
                     reasoning="The workflow is built. Activating it changes production behaviour, so I need approval.")
    activated = bool(activations) and not activations[-1].failed
    if len(plans) == 2 and can_activate:  # without an activation the first update already ended the list
        last = "completed" if activated or not can_activate else "cancelled"
        return _call("plan", {"action": "update", "tasks": _tasks(["completed", "completed", last], goal, activate=can_activate)})
    return ScriptedResponse(text=_final_text(goal, workflow_id, activated, can_activate, activations))


def _final_text(goal: Goal, workflow_id: str, activated: bool, can_activate: bool, activations: list[Step]) -> str:
    steps = " → ".join(label for label in [
        (goal.trigger or ("", "Manual trigger"))[1],
        *(label for _, label in goal.sources),
        *(label for _, label in goal.destinations),
    ])
    lines = [f"Done! I created **{goal.name}** (`{workflow_id}`).", "", f"**Flow:** {steps}", ""]
    if activated:
        lines.append("It is **active** now and will run on its trigger.")
    elif can_activate and activations and "denied" in (activations[-1].result or ""):
        lines.append("I left it **inactive** as you asked — activate it whenever you're ready.")
    elif can_activate and activations:
        error = (activations[-1].result or "").removeprefix("Error:").strip()
        lines.append(f"I could **not activate** it: {error}. It is saved inactive; try activating it from the editor.")
    else:
        lines.append("It has a manual trigger, so run it from the editor when you need it.")
    if goal.destinations:
        node_type, label = goal.destinations[0]
        if node_type == _OWN_WORDS_NODE and label.startswith("Send to "):  # the person's own words: no credential
            lines.append(f"\n> Remember to fill in the address of **{label}** (an HTTP request: the demo has no node "
                         "for it) before the first run.")
        else:
            lines.append(f"\n> Remember to connect your {label} credential before the first run.")
    return "\n".join(lines)


def _answer_text(step: Step) -> str:
    """The user's answers of an ask-user call (not the questions, which contain other words)."""
    data = step.result_json()
    if isinstance(data, dict) and isinstance(data.get("answers"), list):
        return " ".join(str(a.get("answer", "")) for a in data["answers"] if isinstance(a, dict))
    return ""


def _answers_by_question(step: Step) -> dict[str, str]:
    """The user's answer to each question of an ask-user call, by question id."""
    data = step.result_json()
    answers = data.get("answers") if isinstance(data, dict) else None
    if not isinstance(answers, list):
        return {}
    return {str(a.get("questionId", "")): str(a.get("answer", "")) for a in answers if isinstance(a, dict)}


def _workflow_id(text: str) -> str | None:
    match = re.search(r"id `([^`]+)`", text) or re.search(r"\b(wf-\d+)\b", text)
    return match.group(1) if match else None


def _builder(turn: Turn) -> ScriptedResponse:
    brief = turn.user_text
    name_match = re.search(r"named \"([^\"]+)\"", brief)
    name = name_match.group(1) if name_match else "New workflow"
    nodes_match = re.search(r"nodes in order: \[([^\]]+)\]", brief)
    specs = [n.strip() for n in nodes_match.group(1).split(",")] if nodes_match else ["n8n-nodes-base.manualTrigger"]
    parsed = [re.fullmatch(r'(\S+)(?:\s+"([^"]*)")?', spec) for spec in specs]
    node_types = [m.group(1) if m else spec for m, spec in zip(parsed, specs, strict=True)]
    node_names = [m.group(2) if m else None for m in parsed]
    listed = turn.calls("list-nodes")
    if not listed:
        query = " ".join(t.rsplit(".", 1)[-1] for t in node_types)
        return _call("list-nodes", {"query": query},
                     reasoning=f"I need {len(node_types)} nodes for \"{name}\"; checking they exist in the catalogue.")
    created = turn.calls("create-workflow")
    if not created:
        return _call("create-workflow", {"name": name, "nodes": [
                         {"type": t, "name": n} if n else {"type": t} for t, n in zip(node_types, node_names, strict=True)]},
                     reasoning="All nodes are available. Creating the workflow with them connected in a line.")
    result = created[-1].result_json()
    if not isinstance(result, dict) or "id" not in result:
        return ScriptedResponse(text=f"I could not create the workflow: {created[-1].result}")
    names = ", ".join(str(n.get("name")) for n in result.get("nodes", []) if isinstance(n, dict))
    return ScriptedResponse(text=f"Created workflow \"{result.get('name')}\" with id `{result['id']}` "
                                 f"and {len(result.get('nodes', []))} nodes: {names}.")


def demo_model(*, delay: float = 0.0, words_per_chunk: int = 2) -> ScriptedModel:
    """The offline demo model (``delay`` seconds between streamed pieces, for a lifelike pace)."""
    return ScriptedModel(respond, name=DEMO_LABEL, words_per_chunk=words_per_chunk, delay=delay)
