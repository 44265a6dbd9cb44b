"""The offline demo model reacts to what the user typed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.assistant.demo import classify, understand
from instance_ai_tui.assistant.models import select_model
from instance_ai_tui.runtime.scripted import ScriptedModel

from .conftest import answer, collect, of_type, types


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        ("hello", "greeting"),
        ("Hi there!", "greeting"),
        ("what is n8n?", "question"),
        ("list my workflows", "list-workflows"),
        ("show me the files in the workspace", "files"),
        ("write a note: call Bob", "write-note"),
        ("every morning send the weather to Slack", "build"),
        ("post RSS headlines to Telegram daily", "build"),
    ],
)
def test_classify(text: str, kind: str) -> None:
    assert classify(text) == kind


def test_understand_derives_the_workflow_from_the_words() -> None:
    weather = understand("every morning send the weather to Slack")
    assert weather.name == "Weather to Slack"
    assert weather.node_types == ["n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.openWeatherMap",
                                  "n8n-nodes-base.slack"]
    rss = understand('build "Morning news" that posts RSS headlines to Telegram via webhook')
    assert rss.name == "Morning news"
    assert rss.node_types == ["n8n-nodes-base.webhook", "n8n-nodes-base.rssFeedRead", "n8n-nodes-base.telegram"]
    assert understand("build me a workflow").vague


def test_select_model() -> None:
    for name in (None, "demo", " Demo "):
        choice = select_model(name)
        assert choice.is_demo and choice.label == "demo (offline)" and isinstance(choice.model, ScriptedModel)


async def test_greeting_is_brief(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("g", "hello")
    events = await collect(ai, "g")
    assert "tool-call" not in types(events)
    text = "".join(e["payload"]["text"] for e in of_type(events, "text-delta"))
    assert text.startswith("Hello!") and "offline demo" in text


async def test_list_workflows(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("l", "list my workflows")
    events = await collect(ai, "l")
    assert [e["payload"]["toolName"] for e in of_type(events, "tool-call")] == ["list-workflows"]
    text = "".join(e["payload"]["text"] for e in of_type(events, "text-delta"))
    assert "You have 3 workflows" in text and "Daily sales report" in text


async def test_different_requests_build_different_workflows(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("rss", "post RSS headlines to Telegram every evening")
    first = await collect(ai, "rss", until=("confirmation-request",))
    create = next(e for e in first if e["type"] == "tool-call" and e["payload"]["toolName"] == "create-workflow")
    assert create["payload"]["args"]["name"] == "RSS to Telegram"
    assert [n["type"] for n in create["payload"]["args"]["nodes"]] == [
        "n8n-nodes-base.scheduleTrigger", "n8n-nodes-base.rssFeedRead", "n8n-nodes-base.telegram"]
    await answer(ai, first[-1]["payload"]["requestId"], {"approved": False})
    rest = await collect(ai, "rss", after=first[-1]["id"])
    final = "".join(e["payload"]["text"] for e in of_type(rest, "text-delta"))
    assert "**RSS to Telegram**" in final and "inactive" in final
    assert of_type(rest, "tasks-update")[-1]["payload"]["tasks"][-1]["status"] == "cancelled"


async def test_vague_request_asks_first(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("v", "build me a workflow please")
    first = await collect(ai, "v", until=("confirmation-request",))
    request = first[-1]["payload"]
    assert request["toolName"] == "ask-user" and request["inputType"] == "questions"
    assert [q["id"] for q in request["questions"]] == ["trigger", "destination"]
    await answer(ai, request["requestId"], {"kind": "questions", "answers": [
        {"questionId": "trigger", "selectedOptions": ["Webhook"]},
        {"questionId": "destination", "selectedOptions": ["Email"]},
    ]})
    second = await collect(ai, "v", after=first[-1]["id"], until=("confirmation-request", "run-finish"))
    create = next(e for e in second if e["type"] == "tool-call" and e["payload"]["toolName"] == "create-workflow")
    types_ = [n["type"] for n in create["payload"]["args"]["nodes"]]
    assert types_[0] == "n8n-nodes-base.webhook" and types_[-1] == "n8n-nodes-base.gmail"


@pytest.mark.parametrize(("typed", "node_type", "label"), [
    ("Discord #ops 🚀 שלום", "n8n-nodes-base.discord", None),
    ("the #ops wall screen 🚀 שלום", "n8n-nodes-base.httpRequest", "Send to the #ops wall screen 🚀 שלום"),
])
async def test_a_free_text_answer_builds_what_the_person_said(make_ai: Any, typed: str, node_type: str,
                                                               label: str | None) -> None:
    """Issue 33 item 1: a free-text answer ("Discord #ops 🚀 שלום") was ignored and something else built."""
    ai = await make_ai("demo")
    await ai.send("f", "build me a workflow please")
    first = await collect(ai, "f", until=("confirmation-request",))
    await answer(ai, first[-1]["payload"]["requestId"], {"kind": "questions", "answers": [
        {"questionId": "trigger", "selectedOptions": ["Every morning"]},
        {"questionId": "destination", "customText": typed},
    ]})
    second = await collect(ai, "f", after=first[-1]["id"], until=("confirmation-request", "run-finish"))
    create = next(e for e in second if e["type"] == "tool-call" and e["payload"]["toolName"] == "create-workflow")
    nodes = create["payload"]["args"]["nodes"]
    assert nodes[0]["type"] == "n8n-nodes-base.scheduleTrigger"
    assert nodes[-1]["type"] == node_type and nodes[-1].get("name") == label  # a known node: n8n names it


def test_the_last_words_about_a_destination_in_the_persons_own_words_read_right() -> None:
    """Seen in tmux: "Other…" answered "Matrix" ended with "Remember to connect your Send to Matrix credential"."""
    from instance_ai_tui.assistant.demo import _final_text, apply_answers, understand

    own = apply_answers(understand("build me a workflow please"), "Every morning Matrix", {"destination": "Matrix"})
    text = _final_text(own, "wf-1", False, False, [])
    assert "credential" not in text and "fill in the address of **Send to Matrix**" in text, text
    known = apply_answers(understand("build me a workflow please"), "Every morning Slack", {"destination": "Slack"})
    assert "Remember to connect your Slack credential" in _final_text(known, "wf-1", False, False, [])


async def test_files_and_notes(make_ai: Any, workspace: Path) -> None:
    ai = await make_ai("demo", workspace_root=workspace)
    await ai.send("f", "show me the files in my workspace")
    events = await collect(ai, "f")
    assert [e["payload"]["toolName"] for e in of_type(events, "tool-call")] == ["list-files", "read-file"]
    text = "".join(e["payload"]["text"] for e in of_type(events, "text-delta"))
    assert "`README.md`" in text and "Demo project" in text
    await ai.send("f", "write a note: call Bob tomorrow")
    request = (await collect(ai, "f", after=events[-1]["id"], until=("confirmation-request",)))[-1]
    assert request["payload"]["toolName"] == "write-file"
    await answer(ai, request["payload"]["requestId"], {"approved": True})
    await collect(ai, "f", after=request["id"])
    assert "call Bob tomorrow" in (workspace / "notes/instance-ai-note.md").read_text()


def text_of(events: list[dict[str, Any]]) -> str:
    return "".join(e["payload"]["text"] for e in of_type(events, "text-delta"))


def test_delete_intent_and_titles_from_the_users_words() -> None:
    from instance_ai_tui.assistant.demo import _title_for

    assert classify("delete the Alpha workflow") == "delete-workflow"
    assert classify('remove "RSS digest"') == "delete-workflow"
    assert _title_for("User message:\nwhat can you do\n\nAssistant reply:\nI can build workflows") == "What can you do"


async def test_delete_a_workflow_by_name_asks_first_then_deletes(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("d", "delete the RSS digest workflow")
    events = await collect(ai, "d", until=("confirmation-request",))
    request = of_type(events, "confirmation-request")[-1]["payload"]
    assert request["severity"] == "destructive" and request["toolName"] == "delete-workflow"
    await answer(ai, request["requestId"], {"kind": "approval", "approved": True})
    events = await collect(ai, "d", after=events[-1]["id"])
    assert "Deleted **RSS digest**" in text_of(events)
    assert not [w for w in await ai.services.n8n.list_workflows() if w["name"] == "RSS digest"]


async def test_show_files_without_a_workspace_explains_how_to_share_one(make_ai: Any) -> None:
    ai = await make_ai("demo")
    await ai.send("f", "show files")
    events = await collect(ai, "f")
    assert "tool-call" not in types(events)
    assert "--workspace" in text_of(events)


# --------------------------------------------------------------------------- issue 45 item 4


def test_the_demo_instance_has_every_node_its_model_builds_with() -> None:
    """Issue 45 item 4: the wizard's free text "Discord #ops 🚀 שלום" made the demo's own builder fail
    ("unknown node type 'n8n-nodes-base.discord' … not in the demo instance's node catalogue")."""
    from instance_ai_tui.assistant.demo import DEMO_NODE_TYPES
    from instance_ai_tui.assistant.demo_instance import NODE_CATALOGUE

    missing = DEMO_NODE_TYPES - {entry["type"] for entry in NODE_CATALOGUE}
    assert not missing


async def test_a_free_text_destination_is_built_and_the_checklist_ends_with_the_run(make_ai: Any) -> None:
    """Issue 45 item 4: the builder now creates the workflow the answer names, and no task is
    left "in progress" once the run ended."""
    ai = await make_ai("demo")
    await ai.send("f", "build me a workflow please")
    first = await collect(ai, "f", until=("confirmation-request",))
    await answer(ai, first[-1]["payload"]["requestId"], {"kind": "questions", "answers": [
        {"questionId": "trigger", "selectedOptions": ["Every morning"]},
        {"questionId": "destination", "customText": "Discord #ops 🚀 שלום"},
    ]})
    second = await collect(ai, "f", after=first[-1]["id"], until=("confirmation-request", "run-finish"))
    created = next(e for e in second if e["type"] == "tool-result" and "Created workflow" in str(e["payload"]))
    assert "Discord" in str(created["payload"])
    activate = of_type(second, "confirmation-request")[-1]["payload"]
    assert activate["toolName"] == "activate-workflow"
    await answer(ai, activate["requestId"], {"approved": True})
    rest = await collect(ai, "f", after=second[-1]["id"])
    assert of_type(rest, "run-finish")[-1]["payload"]["status"] == "completed"
    tasks = of_type(rest, "tasks-update")[-1]["payload"]["tasks"]
    assert {t["status"] for t in tasks} == {"completed"}


async def test_a_failed_build_ends_its_checklist(make_ai: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """Issue 45 item 4: when the builder fails, the checklist does not stay "in progress"."""
    from instance_ai_tui.assistant import demo_instance

    monkeypatch.setattr(demo_instance, "NODE_CATALOGUE",
                        tuple(n for n in demo_instance.NODE_CATALOGUE if n["type"] != "n8n-nodes-base.slack"))
    ai = await make_ai("demo")
    await ai.send("b", "every morning send the weather to Slack")
    events = await collect(ai, "b", until=("confirmation-request", "run-finish"))
    assert of_type(events, "run-finish"), "the build should end without asking to activate"
    assert "could not create" in text_of(events)
    tasks = of_type(events, "tasks-update")[-1]["payload"]["tasks"]
    assert not [t for t in tasks if t["status"] in ("pending", "in_progress")]


async def test_a_thread_rewound_to_its_first_message_takes_the_title_of_the_new_one(make_ai: Any) -> None:
    """Issue 45 item 6: a rewound thread kept the title of the message it no longer has; a title the
    person chose stays."""
    ai = await make_ai("demo")
    for thread, renamed in (("r", False), ("n", True)):
        await ai.send(thread, "hello there my friend")
        await collect(ai, thread)
        assert (await ai.get_thread(thread)).title == "hello there my friend"
        if renamed:
            await ai.rename_thread(thread, "My own name")
        first = (await ai.store.list_runs(thread_id=thread))[0]
        await ai.rewind(thread, f"{first.run_id}-user")
        await ai.send(thread, "what can you do for my team?")
        await collect(ai, thread, after=0, until=("run-finish",))
        title = (await ai.get_thread(thread)).title
        assert title == ("My own name" if renamed else "what can you do for my team?")
