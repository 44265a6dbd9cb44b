"""Text from outside never reaches the terminal raw (issue 31, item 1).

A hostile string (OSC 52 clipboard write, OSC 0 window title, CSI 2J screen wipe, an 8-bit
CSI, a C1 NEL and a bidi override) is put everywhere a model, a tool or a server can put
text: thread titles, the user message echoed by ``run-start``, reasoning, tool names,
arguments and results, sub-agents, tasks, the answer (split into 3-character deltas so each
escape sequence spans several), an error, a title update, an approval card, a questions card,
notifications, the permissions and model pickers. The app runs with a driver that is not
headless and keeps everything Textual writes to the terminal; none of those bytes may appear
raw, and the visible stand-ins (``␛]52;``) must.
"""

from __future__ import annotations

import re
from typing import Any, ClassVar

from textual.drivers.headless_driver import HeadlessDriver

from instance_ai_tui.client.base import ClientError, ConnectionState
from instance_ai_tui.protocol.api import ModelInfo, ModelList, ThreadPermissions
from tests.support.recorded import RecordedClient
from tests.support.waiting import until
from tests.tui.scripts import ev, make_app

HOSTILE = "ok\x1b]52;c;cHduZWQ=\x07 wipe\x1b[2J title\x1b]0;pwned\x07 csi\x9b2J nel\x85 \u202eevil\u202c end"

#: what Textual itself writes: CSI sequences (cursor, colours, modes), OSC 22 (pointer
#: shape), OSC 8 (links); our app writes OSC 2 (title) and 9 (desktop notification) after
#: stripping what is not printable (``tui/pending_watch.py``)
_TEXTUAL_CSI = re.compile(r"\x1b\[[0-9;:?<>=]*[ -/]*[@-~]")
_OSC = re.compile(r"\x1b\](\d+);([^\x07\x1b]*)(?:\x07|\x1b\\)")


class CapturingDriver(HeadlessDriver):
    """Headless input, but everything the app renders is written here (kept in ``OUTPUT``)."""

    output: ClassVar[list[str]] = []

    @property
    def is_headless(self) -> bool:
        return False

    def write(self, data: str) -> None:
        CapturingDriver.output.append(data)

    def flush(self) -> None:
        pass


def assert_terminal_clean(output: str) -> None:
    """No byte of the hostile string reaches the terminal as a control: only Textual's own
    sequences are there, and the text was drawn (its stand-ins are)."""
    for raw in ("\x1b]52", "\x1b]0;", "\x1b[2J", "cHduZWQ=\x07"):
        assert raw not in output, f"{raw!r} reached the terminal"
    assert not re.search("[\x80-\x9f\u202a-\u202e\u2066-\u2069]", output), "a C1 or bidi character was drawn"
    for match in _OSC.finditer(output):
        number, text = match.groups()
        assert number in ("2", "8", "9", "22"), f"OSC {number} written: {match.group()!r}"
        assert text.isprintable(), f"a control inside OSC {number}: {text!r}"
    rest = _OSC.sub("", _TEXTUAL_CSI.sub("", output))
    assert "\x1b" not in rest, f"a stray ESC: {rest[max(0, rest.index(chr(27)) - 20):][:60]!r}"
    # (BEL alone is the app's bell for a new card: ``TerminalSignals.arrived``)
    assert not re.search("[\x00-\x06\x08\x0b-\x0c\x0e-\x1f\x7f]", rest), "a C0 control was drawn"
    assert "␛]52;c;cHduZWQ=" in output and "␛[2J" in output  # drawn, visibly


def client_detail(text: str) -> str:
    """A connection state's detail as a client reports it (``Client._set_state``)."""
    probe = RecordedClient()
    probe._set_state(ConnectionState.OFFLINE, text)
    return probe.state_detail


class HostileClient(RecordedClient):
    """Every server answer the app draws carries the hostile string."""

    can_switch_model = True

    async def permissions(self, thread_id: str) -> ThreadPermissions:
        return ThreadPermissions(always_allow=[f"tool{HOSTILE}"])

    async def list_models(self, thread_id: str | None = None) -> ModelList:
        return ModelList(models=[ModelInfo(name=f"model{HOSTILE}", context_window=1000)], current="m", default="m")


def hostile_run(run: str, *, card: str) -> list[dict[str, Any]]:
    answer = f"Here:\n\n- {HOSTILE}\n\n```\n{HOSTILE}\n```\n\n| a | b |\n|---|---|\n| {HOSTILE} | x |\n"
    events = [
        ev("run-start", run=run, messageId="m1", userMessage=f"asked {HOSTILE}"),
        ev("reasoning-delta", run=run, text=f"thinking {HOSTILE}"),
        ev("tool-call", run=run, toolCallId="tc1", toolName=f"search{HOSTILE}", args={f"q{HOSTILE}": HOSTILE}),
        ev("tool-result", run=run, toolCallId="tc1", result={"hits": [HOSTILE]}),
        ev("tool-call", run=run, toolCallId="tc2", toolName="delegate", args={"role": HOSTILE}),
        # a short hostile role: the sub-agent's row is one line cut with "…", and its summary must show too
        ev("agent-spawned", "a2", run=run, parentId="a1", role=f"helper{HOSTILE[:3]}", tools=[HOSTILE]),
        ev("tool-call", "a2", run=run, toolCallId="tc3", toolName="fetch", args={"url": HOSTILE}),
        ev("tool-error", "a2", run=run, toolCallId="tc3", error=f"failed {HOSTILE}"),
        ev("agent-completed", "a2", run=run, role=HOSTILE, result=f"done {HOSTILE}"),
        ev("tool-result", run=run, toolCallId="tc2", result=HOSTILE),
        ev("tasks-update", run=run, tasks=[{"id": "t1", "description": f"task {HOSTILE}", "status": "in_progress"}]),
        ev("thread-title-updated", run=run, title=f"renamed {HOSTILE}"),
        *[ev("text-delta", run=run, text=answer[i : i + 3]) for i in range(0, len(answer), 3)],
        ev("status", run=run, message=f"status {HOSTILE}"),
        ev("error", run=run, content=f"error {HOSTILE}"),
        # the n8n panel: a background task, setup items, a quota banner
        ev("agent-spawned", "a3", run=run, parentId="a1", role=f"bg {HOSTILE}", taskId="task-1"),
        ev("setup-items", run=run, workflowId=f"wf {HOSTILE}", items=[
            {"kind": "credential", "appDisplayName": f"Slack {HOSTILE}", "nodeBindings": [{"nodeName": HOSTILE}]}]),
        ev("error", run=run, content=f"quota {HOSTILE}", code="quota_exhausted"),
    ]
    if card == "approval":
        events += [
            ev("tool-call", run=run, toolCallId="tc9", toolName=f"delete{HOSTILE}", args={"id": HOSTILE}),
            ev("confirmation-request", run=run, requestId="cr-1", toolCallId="tc9", toolName=f"delete{HOSTILE}",
               args={"id": HOSTILE}, severity="destructive", message=f"Delete {HOSTILE}?"),
        ]
    else:
        events += [
            ev("tool-call", run=run, toolCallId="q1", toolName="ask-user", args={}),
            ev("confirmation-request", run=run, requestId="cr-q", toolCallId="q1", toolName="ask-user",
               severity="info", message=f"Questions {HOSTILE}", inputType="questions",
               questions=[{"id": "w", "question": f"When {HOSTILE}?", "type": "single",
                           "options": [f"now {HOSTILE}", "later"]}]),
        ]
    return events


def drawn(*texts: str) -> bool:
    """Whether each of ``texts`` has been written to the terminal so far."""
    plain = _TEXTUAL_CSI.sub("", "".join(CapturingDriver.output))
    return all(text in plain for text in texts)


def open_folded(app: Any) -> bool:
    """Open every block of the conversation still folded; whether none was."""
    folded = [block for turn in app.view.assistant_turns() for block in turn.query("*")
              if getattr(block, "expanded", True) is False and hasattr(block, "action_toggle_block")]
    for block in folded:
        block.action_toggle_block()
    return not folded


async def _sweep(card: str) -> str:
    CapturingDriver.output = []
    client = HostileClient(
        {"t": hostile_run("r1", card=card), "other": []},
        titles={"t": f"first {HOSTILE}", "other": f"second {HOSTILE}"},
    )
    client._threads["other"].info = client._threads["other"].info.model_copy(
        update={"updated_at": client._threads["t"].info.updated_at.replace(year=2000)})
    app = make_app(client)
    app.driver_class = CapturingDriver
    async with app.run_test(size=(160, 220), headless=False, notifications=True) as pilot:
        await app.wait_until_ready()
        await app.wait_until_rendered()
        await until(lambda: app.thread_id == "t" and bool(app.thread.pending), pilot)
        app.actions.show_threads()
        app.show_error(f"Cannot list threads: {ClientError(HOSTILE)}")  # as the app words a server's error
        app.connection.on_state(ConnectionState.OFFLINE, client_detail(HOSTILE))
        app.notify(f"raw {HOSTILE}", title="note")  # any notification, whatever built its text
        await until(lambda: drawn("second ok␛", "Cannot list threads: ok␛", "raw ok␛"), pilot, interval=0.1)
        # every block open (a sub-agent's own blocks mount once it is), until the conversation's texts are drawn
        # (the pickers' texts and the renamed title are checked at the end, once the pickers were drawn)
        conversation = [text for text in DRAWN if text not in ("toolok␛", "modelok␛", "renamed ok␛")]
        # a 160x220 screen of every widget: 14-24 s beside stress-ng --cpu 4, over 30 s in a whole run at load 13
        await until(lambda: open_folded(app) and drawn(*conversation), pilot, interval=0.1, timeout=90,
                    what=lambda: f"every block open and drawn; not drawn: {[t for t in conversation if not drawn(t)]}")
        app.actions.show_permissions()
        await until(lambda: drawn("toolok␛"), pilot, interval=0.1)
        await pilot.press("escape")
        main = app.screen_stack[0]
        await until(lambda: app.screen is main, pilot)
        app.actions.choose_model()
        await until(lambda: drawn("modelok␛"), pilot, interval=0.1)
        await pilot.press("escape")
        await until(lambda: app.screen is main, pilot)
    return "".join(CapturingDriver.output)


#: the text of each widget the sweep draws (so each one was on the screen, made visible)
DRAWN = ("second ok␛", "asked ok␛", "thinking ok␛", "search", "hits", "helperok␛", "failed ok␛", "done ok␛",
         "task ok␛", "renamed ok␛", "Here:", "error ok␛", "Cannot list threads: ok␛", "toolok␛",
         "modelok␛", "raw ok␛", "bg ok␛", "Slack ok␛", "quota ok␛", "<U+202E>evil<U+202C>", "csi<U+009B>2J", "nel<U+0085>")


def assert_drawn(output: str, *texts: str) -> None:
    plain = _TEXTUAL_CSI.sub("", output)
    missing = [text for text in (*DRAWN, *texts) if text not in plain]
    assert not missing, f"not drawn: {missing}"


async def test_hostile_text_through_every_widget_with_an_approval_card() -> None:
    output = await _sweep("approval")
    assert_terminal_clean(output)
    assert_drawn(output, "Delete ok␛")


async def test_hostile_text_through_every_widget_with_a_questions_card() -> None:
    output = await _sweep("questions")
    assert_terminal_clean(output)
    assert_drawn(output, "Questions ok␛", "When ok␛", "now ok␛")
