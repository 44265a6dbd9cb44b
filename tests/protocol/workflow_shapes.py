"""The workflow shapes the canvas is tested on, as n8n workflow JSON (positions as the editor saves them).

The same JSON is drawn offline (``test_workflow_drawing.py``) and created in a real n8n
(``tests/live_n8n/test_workflow_canvas_live.py``), whose answer must draw the same.
"""

from __future__ import annotations

import random
from typing import Any

BASE = "n8n-nodes-base."
LC = "@n8n/n8n-nodes-langchain."


def node(name: str, type_name: str, x: float, y: float, version: float = 1,
         parameters: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"name": name, "type": type_name, "typeVersion": version, "position": [x, y],
            "parameters": parameters or {}}


def main(*outputs: list[tuple[str, int]] | list[str]) -> dict[str, Any]:
    """``main(["B"], ["C"])``: output 0 to B, output 1 to C; ``("B", 1)`` targets B's input 1."""
    lists = []
    for targets in outputs:
        lists.append([{"node": t, "type": "main", "index": 0} if isinstance(t, str)
                      else {"node": t[0], "type": "main", "index": t[1]} for t in targets])
    return {"main": lists}


def ai(kind: str, target: str) -> dict[str, Any]:
    return {kind: [[{"node": target, "type": kind, "index": 0}]]}


def linear() -> dict[str, Any]:
    return {"name": "Linear chain", "nodes": [
        node("Every morning", BASE + "scheduleTrigger", 0, 0, 1.2),
        node("Get weather", BASE + "httpRequest", 220, 0, 4.2),
        node("Format message", BASE + "set", 440, 0, 3.4),
        node("Post to Slack", BASE + "slack", 660, 0, 2.3),
    ], "connections": {"Every morning": main(["Get weather"]), "Get weather": main(["Format message"]),
                       "Format message": main(["Post to Slack"])}}


def if_merge() -> dict[str, Any]:
    return {"name": "IF with two branches merging", "nodes": [
        node("New order", BASE + "webhook", 0, 100, 2, {"path": "order", "httpMethod": "POST"}),
        node("Big order?", BASE + "if", 220, 100, 2.2),
        node("Notify sales", BASE + "slack", 440, 0, 2.3),
        node("Tag small", BASE + "set", 440, 200, 3.4),
        node("Merge", BASE + "merge", 660, 100, 3.1),
        node("Save row", BASE + "googleSheets", 880, 100, 4.6),
    ], "connections": {"New order": main(["Big order?"]), "Big order?": main(["Notify sales"], ["Tag small"]),
                       "Notify sales": main([("Merge", 0)]), "Tag small": main([("Merge", 1)]),
                       "Merge": main(["Save row"])}}


def switch4() -> dict[str, Any]:
    rules = {"values": [{"outputKey": key, "conditions": {}} for key in ("urgent", "sales", "support", "spam")]}
    return {"name": "Switch with 4 outputs", "nodes": [
        node("Incoming mail", BASE + "manualTrigger", 0, 150),
        node("Route", BASE + "switch", 220, 150, 3.2, {"rules": rules}),
        node("Page on-call", BASE + "httpRequest", 440, 0, 4.2),
        node("To CRM", BASE + "set", 440, 100, 3.4),
        node("Open ticket", BASE + "httpRequest", 440, 200, 4.2),
        node("Drop", BASE + "noOp", 440, 300),
    ], "connections": {"Incoming mail": main(["Route"]),
                       "Route": main(["Page on-call"], ["To CRM"], ["Open ticket"], ["Drop"])}}


def loop() -> dict[str, Any]:
    return {"name": "Loop over items", "nodes": [
        node("Start", BASE + "manualTrigger", 0, 0),
        node("Loop over items", BASE + "splitInBatches", 220, 0, 3),
        node("Call API", BASE + "httpRequest", 440, 100, 4.2),
        node("Wait", BASE + "wait", 660, 100, 1.1),
        node("Done", BASE + "noOp", 440, -100),
    ], "connections": {"Start": main(["Loop over items"]), "Loop over items": main(["Done"], ["Call API"]),
                       "Call API": main(["Wait"]), "Wait": main(["Loop over items"])}}


def ai_agent() -> dict[str, Any]:
    return {"name": "AI agent with model, memory and tools", "nodes": [
        node("When chat message received", LC + "chatTrigger", 0, 0, 1.1),
        node("AI Agent", LC + "agent", 220, 0, 1.7),
        node("OpenAI Chat Model", LC + "lmChatOpenAi", 100, 220, 1.2),
        node("Simple Memory", LC + "memoryBufferWindow", 260, 220, 1.3),
        node("Calculator", LC + "toolCalculator", 420, 220, 1),
        node("Wikipedia", LC + "toolWikipedia", 560, 220, 1),
        node("Send answer", BASE + "slack", 520, 0, 2.3),
    ], "connections": {
        "When chat message received": main(["AI Agent"]), "AI Agent": main(["Send answer"]),
        "OpenAI Chat Model": ai("ai_languageModel", "AI Agent"), "Simple Memory": ai("ai_memory", "AI Agent"),
        "Calculator": ai("ai_tool", "AI Agent"), "Wikipedia": ai("ai_tool", "AI Agent")}}


def big(count: int = 60, seed: int = 60) -> dict[str, Any]:
    """``count`` nodes as people build them: a trigger, chains, IFs that branch and merge back."""
    rng = random.Random(seed)
    nodes = [node("Trigger", BASE + "scheduleTrigger", 0, 0, 1.2)]
    connections: dict[str, Any] = {}
    tips = ["Trigger"]
    column = {"Trigger": 0}
    row = {"Trigger": 0}
    i = 1
    while len(nodes) < count:
        source = rng.choice(tips)
        if rng.random() < 0.2 and len(nodes) + 4 <= count:  # an IF with two branches that merge
            names = [f"Check {i}", f"Yes {i}", f"No {i}", f"Merge {i}"]
            c, r = column[source] + 1, row[source]
            nodes += [node(names[0], BASE + "if", 220 * c, 200 * r, 2.2),
                      node(names[1], BASE + "set", 220 * (c + 1), 200 * r, 3.4),
                      node(names[2], BASE + "httpRequest", 220 * (c + 1), 200 * (r + 1), 4.2),
                      node(names[3], BASE + "merge", 220 * (c + 2), 200 * r, 3.1)]
            connections.setdefault(source, main([]))["main"][0].append({"node": names[0], "type": "main", "index": 0})
            connections[names[0]] = main([names[1]], [names[2]])
            connections[names[1]] = main([(names[3], 0)])
            connections[names[2]] = main([(names[3], 1)])
            for n, dc, dr in zip(names, (0, 1, 1, 2), (0, 0, 1, 0), strict=True):
                column[n], row[n] = c + dc, r + dr
            tips.remove(source)
            tips.append(names[3])
        else:
            name = f"Step {i}"
            fork = source in connections and rng.random() < 0.7
            c, r = column[source] + 1, row[source] + (max(row.values()) + 1 if fork else 0)
            nodes.append(node(name, BASE + rng.choice(["httpRequest", "set", "code", "slack"]), 220 * c, 200 * r))
            connections.setdefault(source, main([]))["main"][0].append({"node": name, "type": "main", "index": 0})
            column[name], row[name] = c, r
            if not fork:
                tips.remove(source)
            tips.append(name)
        i += 1
    assert len(nodes) == count
    return {"name": f"{count} nodes", "nodes": nodes, "connections": connections}


SHAPES = {"linear": linear, "if_merge": if_merge, "switch4": switch4, "loop": loop, "ai_agent": ai_agent,
          "sixty": big}


def without_positions(workflow: dict[str, Any]) -> dict[str, Any]:
    return {**workflow, "nodes": [{k: v for k, v in n.items() if k != "position"} for n in workflow["nodes"]]}
