"""The keyboard model (issue 32, ``docs/keyboard.md``): where keys go is always visible and
escapable, focus never moves by itself, a lasting grant takes two different keys, Ctrl+C clears
the prompt first, pastes keep their line breaks, an unknown command leaves the cursor at the end.
Every test drives the real app with Pilot; the runs are recorded protocol events."""

from __future__ import annotations

from typing import Any

from textual import events

from instance_ai_tui.protocol.api import ApprovalConfirm
from instance_ai_tui.tui.widgets.confirmations import GRACE_SECONDS, ApprovalCard, ConfirmCard, TextCard
from instance_ai_tui.tui.widgets.turns import UserMessage
from tests.support.waiting import until

from .scripts import SIZE, approval_run, ev, make_app, recorded, simple_run


def confirms(client: Any) -> list[Any]:
    return [args for name, args in client.calls if name == "confirm"]


def card_with_keys(app: Any) -> Any:
    node = app.focused
    while node is not None and not isinstance(node, ConfirmCard):
        node = node.parent
    return node


async def type_text(pilot: Any, text: str) -> None:
    await pilot.press(*["space" if c == " " else c for c in text])


async def send(pilot: Any, app: Any, text: str) -> None:
    app.prompt.focus()
    app.prompt.load_text(text)
    await pilot.press("enter")


async def go_to_card(app: Any, pilot: Any) -> ConfirmCard:
    await until(lambda: bool(app.thread.pending), pilot)
    await pilot.press("ctrl+g")
    await until(lambda: card_with_keys(app) is not None, pilot)
    card = card_with_keys(app)
    await pilot.pause(GRACE_SECONDS)
    return card


def notes(app: Any) -> list[str]:
    return [str(n.message) for n in app._notifications]


# --------------------------------------------------------------------------- visible and escapable


async def test_the_status_line_names_where_keys_go_and_esc_returns_to_the_prompt() -> None:
    client = recorded([simple_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "list my workflows")
        await until(lambda: not app.conversation.is_streaming and app.view.assistant_turns(), pilot)
        await until(lambda: "keys: prompt" in app.status_line.plain, pilot)
        message = next(w for w in app.view.turns.values() if isinstance(w, UserMessage))
        await pilot.click(message)  # on purpose: the block has the keys, and says so
        await until(lambda: app.focused is message, pilot)
        await until(lambda: "keys: block · Esc back" in app.status_line.plain, pilot)
        await pilot.press("escape")  # back to the prompt (a block is no text field)
        await until(lambda: app.focused is app.prompt and "keys: prompt" in app.status_line.plain, pilot)
        app.thread_list.focus_list()
        await until(lambda: "keys: thread list · Esc back" in app.status_line.plain, pilot)
        await pilot.press("escape")
        await until(lambda: app.focused is app.prompt, pilot)
        await pilot.press("ctrl+f")
        await until(lambda: "keys: find" in app.status_line.plain, pilot)


async def test_focus_marks_are_shapes_that_show_in_an_ansi_theme() -> None:
    client = recorded([approval_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        # the theme files are read after the first frame, in the background: wait for this one
        await until(lambda: "instance-ansi" in app.available_themes, pilot)
        app.theme = "instance-ansi"
        await until(lambda: app.has_class("-ansi-theme"), pilot)
        await send(pilot, app, "archive it")
        card = await go_to_card(app, pilot)
        # (styles follow focus on the next refresh: wait for them, a loaded machine takes longer)
        await until(lambda: card.styles.border_left[0] == "double", pilot)  # ║: a shape, not only a colour
        await until(lambda: "▶ keys: this card · Esc back to the prompt" in str(card.focus_line.render()), pilot)
        message = next(w for w in app.view.turns.values() if isinstance(w, UserMessage))
        message.focus()
        await until(lambda: message.styles.outline_left[0] == "double", pilot)
        await until(lambda: card.styles.border_left[0] != "double", pilot)
        await until(lambda: "Ctrl+G" in str(card.focus_line.render()), pilot)  # not its keys: how to reach it
        app.thread_list.focus_list()
        await until(lambda: app.thread_list.styles.border_right[0] == "double", pilot)


async def test_esc_on_a_card_goes_back_to_the_prompt_and_a_card_that_goes_away_gives_the_keys_back() -> None:
    client = recorded([approval_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        await go_to_card(app, pilot)
        assert "keys: card · Esc back" in app.status_line.plain
        await pilot.press("escape")  # back to the prompt; the run goes on waiting
        await until(lambda: app.focused is app.prompt, pilot)
        assert app.thread.pending and not [c for c in client.calls if c[0] == "cancel"]
        await go_to_card(app, pilot)
        await pilot.press("ctrl+c")  # an empty prompt: stop the agent; its card goes away
        await until(lambda: not app.conversation.is_streaming and not app.thread.pending, pilot)
        await until(lambda: app.focused is app.prompt, pilot)  # not a block of the transcript
        await type_text(pilot, "check each key")  # c, k, e: block keys, if a block had them
        assert app.prompt.text == "check each key"
        assert not any("Copied" in n or "copied" in n or "saved in" in n for n in notes(app))
        assert not [c for c in client.calls if c[0] == "rewind"]


async def test_ctrl_c_clears_a_non_empty_prompt_first_even_with_a_card_waiting() -> None:
    client = recorded([approval_run()])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        await until(lambda: bool(app.thread.pending), pilot)
        await type_text(pilot, "and also")
        await pilot.press("ctrl+c")
        await pilot.pause(0.1)  # the scenario: a window in which nothing may be cancelled or answered
        assert app.prompt.text == "" and app.thread.pending and app.conversation.is_streaming
        assert not [c for c in client.calls if c[0] == "cancel"] and confirms(client) == []


# --------------------------------------------------------------------------- answers need a deliberate act


async def test_always_allow_says_what_it_grants_and_needs_a_second_different_key() -> None:
    client = recorded([approval_run("warning")])  # a destructive card offers no always-allow (issue 42.4)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "archive it")
        card = await go_to_card(app, pilot)
        assert isinstance(card, ApprovalCard)
        await pilot.press("a")
        await until(lambda: card.armed is not None, pilot)
        shown = str(card.always_line.render())
        assert "“delete-workflow” runs without asking, for the rest of this thread" in shown
        assert "/permissions" in shown and "Enter grant it" in shown
        await pilot.press("l")  # "al…": any other key goes back, and grants nothing
        await pilot.pause(0.1)  # the scenario: a window in which no answer may be sent
        assert card.armed is None and confirms(client) == [] and not card.answered
        await pilot.press("a")
        await pilot.press("escape")  # back without granting (the card keeps the keys)
        await pilot.pause(0.1)  # the scenario: a window in which no answer may be sent
        assert card.armed is None and confirms(client) == [] and card_with_keys(app) is card
        await pilot.press("a", "enter")
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-1", ApprovalConfirm(approved=True, scope="session"))]
        await until(lambda: app.focused is app.prompt, pilot)  # answered: the prompt has the keys


async def test_esc_in_a_text_card_goes_back_without_declining_and_decline_is_a_button() -> None:
    run = [
        ev("run-start", messageId="m1"),
        ev("tool-call", toolCallId="t1", toolName="ask-user", args={}),
        ev("confirmation-request", requestId="cr-t", toolCallId="t1", toolName="ask-user", severity="info",
           message="Which Slack channel?", inputType="text"),
        ev("tool-result", toolCallId="t1", result={"answered": True}),
        ev("run-finish", status="completed"),
    ]
    client = recorded([run])
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "post it")
        card = await go_to_card(app, pilot)
        assert isinstance(card, TextCard)
        await until(lambda: card.field.has_focus, pilot)
        await pilot.press("escape")
        await until(lambda: app.focused is app.prompt, pilot)
        assert confirms(client) == [] and app.thread.pending
        await pilot.press("ctrl+g")
        await until(lambda: card.field.has_focus, pilot)
        await pilot.press("tab", "enter")  # Tab to Decline, Enter
        await until(lambda: confirms(client), pilot)
        assert confirms(client) == [("cr-t", ApprovalConfirm(approved=False))]


# --------------------------------------------------------------------------- paste, unknown command


async def test_a_paste_keeps_its_line_breaks_whatever_their_kind_and_the_label_counts_them() -> None:
    app = make_app(recorded([]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        lines = [f"line {i}" for i in range(400)]
        app.post_message(events.Paste("\r".join(lines)))  # tmux pastes with CR line ends
        await until(lambda: bool(app.prompt.text), pilot)
        assert app.prompt.text == "[pasted 400 lines #1]"
        assert app.prompt.expanded_text().split("\n") == lines
        app.prompt.clear()
        app.prompt.pastes.clear()
        app.post_message(events.Paste("\r".join(lines) + "\r"))  # a last line end ends the last line
        await until(lambda: bool(app.prompt.text), pilot)
        assert app.prompt.text == "[pasted 400 lines #1]"
        app.prompt.clear()
        app.prompt.pastes.clear()
        app.post_message(events.Paste("one\r\ntwo\r\nthree"))  # CRLF, short: inserted as it is
        await until(lambda: bool(app.prompt.text), pilot)
        assert app.prompt.text == "one\ntwo\nthree" and app.prompt.document.line_count == 3
        app.prompt.clear()
        app.post_message(events.Paste("a\rb\nc\r\nd"))  # mixed
        await until(lambda: bool(app.prompt.text), pilot)
        assert app.prompt.text == "a\nb\nc\nd"


async def test_after_an_unknown_command_the_cursor_stays_at_the_end() -> None:
    app = make_app(recorded([]))
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        app.prompt.focus()
        await type_text(pilot, "/x")
        await pilot.press("enter")
        await until(lambda: any("Unknown command" in n or "/x" in n for n in notes(app)), pilot)
        await type_text(pilot, "yz")
        assert app.prompt.text == "/xyz"


async def test_esc_on_a_queued_message_goes_back_to_the_prompt_without_stopping_the_agent() -> None:
    from instance_ai_tui.tui.widgets.queued import QueuedRow

    from .scripts import endless_run

    client = recorded([endless_run()], delay=0.02)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "write a lot")
        await until(lambda: app.conversation.is_streaming, pilot)
        await send(pilot, app, "and then this")  # the agent works: it waits in the queue
        await until(lambda: bool(app.query(QueuedRow)), pilot)
        row = app.query(QueuedRow).first()
        row.focus()
        await until(lambda: app.focused is row and "keys: a queued message · Esc back" in app.status_line.plain, pilot)
        await pilot.press("escape")  # not a text field: back to the prompt, the agent goes on
        await until(lambda: app.focused is app.prompt, pilot)
        assert app.conversation.is_streaming and ("cancel", app.thread_id) not in client.calls
        await pilot.press("escape")  # right after coming back, Esc only says that the next one stops (39.6)
        await pilot.pause(0.1)  # the scenario: a window in which nothing may be cancelled
        assert ("cancel", app.thread_id) not in client.calls
        await pilot.press("escape")  # the next Esc in the prompt stops the agent
        await until(lambda: ("cancel", app.thread_id) in client.calls, pilot)
