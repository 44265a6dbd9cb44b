"""The status line shows the thread's tokens and cost: live from ``run-finish`` ``payload.usage``,
restored from the thread's ``metadata.usage`` on switch and after a restart, never twice."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from instance_ai_tui.assistant.service import AssistantOptions, InstanceAI
from instance_ai_tui.bus.memory import InProcessBus
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.protocol.api import ThreadMessages
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from instance_ai_tui.runtime.usage import PriceTable, Usage
from instance_ai_tui.store.sqlite import SqliteStore
from tests.support.recorded import RecordedClient
from tests.support.waiting import until

from .scripts import SIZE, make_app

MODEL = "priced-model"
PRICES = PriceTable({MODEL: {"input": 1.0, "output": 2.0}}, defaults=False)  # USD per 1M tokens


def answer_for(request: ModelRequest) -> ScriptedResponse:
    """Each answer reports 1200 x (number of user turns so far) input tokens and 300 output tokens."""
    turns = sum(1 for m in request.messages if m.get("role") == "user")
    return ScriptedResponse(text=f"Answer {turns}.", usage=Usage(input_tokens=1200 * turns, output_tokens=300,
                                                              total_tokens=1200 * turns + 300))


async def start_ai(db: Path) -> InstanceAI:
    store = SqliteStore(db)
    model = ScriptedModel(answer_for, name=MODEL, prices=PRICES)
    ai = InstanceAI(store, InProcessBus(store), model=model, options=AssistantOptions(generate_titles=False))
    await ai.start()
    return ai


async def send(pilot: Any, app: Any, text: str) -> None:
    runs = len(app.view.assistant_turns())
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")
    await until(lambda: app.thread_id is not None and len(app.view.assistant_turns()) > runs
                and not app.conversation.is_streaming and app.status_info.run_state == "idle", pilot)


async def test_tokens_and_cost_live_on_switch_and_after_restart(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    settings = Settings.model_validate({"db_path": db})
    ai = await start_ai(db)
    try:
        app = make_app(EmbeddedClient(ai), settings)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            assert " in · " not in app.status_line.plain  # nothing spent yet
            await send(pilot, app, "first question")
            await until(lambda: app.status_info.input_tokens == 1200, pilot)
            info = app.status_info
            assert (info.output_tokens, round(info.cost or 0, 6)) == (300, 0.0018)
            await send(pilot, app, "second question")
            await until(lambda: app.status_info.input_tokens == 3600, pilot)
            assert app.status_info.output_tokens == 600 and round(app.status_info.cost or 0, 6) == 0.0048
            await until(lambda: "3.6k in · 600 out · $0.0048" in app.status_line.plain, pilot)
            thread = app.thread_id

            # the export carries the total
            target = tmp_path / "export.md"
            await app.actions.export(str(target)).wait()
            assert "*Usage: 3,600 tokens in · 600 out · $0.0048*" in target.read_text()

            # a new thread starts at zero; switching back restores the stored total (once)
            await pilot.press("ctrl+n")
            await until(lambda: app.thread_id is None and " in · " not in app.status_line.plain, pilot)
            assert app.status_info.input_tokens == 0 and app.status_info.cost is None
            app.thread_list.post_message(app.thread_list.Selected(app.thread_list, thread, "local"))
            await until(lambda: app.thread_id == thread and app.status_info.input_tokens, pilot)
            await until(lambda: "3.6k in · 600 out · $0.0048" in app.status_line.plain, pilot)
            assert (app.status_info.input_tokens, app.status_info.output_tokens) == (3600, 600)
    finally:
        await ai.shutdown()

    # a restart on the same database: the thread's total is shown again
    ai = await start_ai(db)
    try:
        app = make_app(EmbeddedClient(ai), settings)
        async with app.run_test(size=SIZE) as pilot:
            await app.wait_until_ready()
            await until(lambda: "3.6k in · 600 out · $0.0048" in app.status_line.plain, pilot)
            assert app.thread_id == thread
            await send(pilot, app, "third question")  # 3 user turns: 3600 in, 300 out
            await until(lambda: app.status_info.input_tokens == 7200, pilot)
            assert app.status_info.output_tokens == 900
    finally:
        await ai.shutdown()


def _run(run_id: str, text: str, usage: dict[str, Any]) -> list[dict[str, Any]]:
    orchestrator = f"orchestrator-{run_id}"
    return [
        {"type": "run-start", "runId": run_id, "agentId": orchestrator, "payload": {"messageId": f"m-{run_id}"}},
        {"type": "text-delta", "runId": run_id, "agentId": orchestrator, "payload": {"text": text}},
        {"type": "run-finish", "runId": run_id, "agentId": orchestrator, "payload": {"status": "completed",
                                                                                      "usage": usage}},
    ]


class _WithTotal(RecordedClient):
    """A recorded thread whose history says its total already counts ``run-2``; the replayed
    log still contains ``run-2``'s ``run-finish`` (the race the ``lastRunId`` guard is for)."""

    async def messages(self, thread_id: str) -> ThreadMessages:
        history = await super().messages(thread_id)
        return history.model_copy(update={"metadata": {"usage": {
            "inputTokens": 5000, "outputTokens": 700, "cost": 0.25, "runs": 2, "lastRunId": "run-2"}}})


async def test_recorded_run_finish_usage_and_the_last_counted_run_is_not_added_twice() -> None:
    # the stream still delivers run-2's run-finish although the total read with the history counts it
    log = _run("run-2", "two", {"inputTokens": 3000, "outputTokens": 400, "cost": 0.15})
    later = _run("run-x", "three", {"inputTokens": 1000, "outputTokens": 50, "unknownField": 1})[1:]
    app = make_app(_WithTotal(logs={"t": log}, runs=[later], model_name="recorded"), Settings())
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await until(lambda: app.status_info.input_tokens, pilot)
        assert (app.status_info.input_tokens, app.status_info.output_tokens) == (5000, 700)
        assert round(app.status_info.cost or 0, 6) == 0.25
        assert "5k in · 700 out · $0.2500" in app.status_line.plain
        app.prompt.focus()
        app.prompt.load_text("again")
        await pilot.press("enter")
        await until(lambda: app.status_info.input_tokens == 6000, pilot)
        # a run without a cost adds its tokens; the known cost stays
        assert app.status_info.output_tokens == 750 and round(app.status_info.cost or 0, 6) == 0.25
