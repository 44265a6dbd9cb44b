"""The main footer fits its width (issue 45, seen in tmux: at 160 columns during a run its last
keys fell off, one cut in a word)."""

from __future__ import annotations

from typing import Any

from textual.widgets import Footer

from instance_ai_tui.tui import keymap
from instance_ai_tui.tui.textual_internals import footer_key_class
from tests.support.waiting import until

from .scripts import ANSWER, endless_run, ev, make_app, recorded, simple_run, text_deltas
from .test_interactions import send


def _keys(app: object) -> list[Any]:
    footer = app.screen.query_one(Footer)  # type: ignore[attr-defined]
    return list(footer.query(footer_key_class()))


def test_fit_footer_keeps_whole_keys_shortens_then_drops_the_least_useful() -> None:
    items = [keymap.FooterItem(spec.id, "x", spec.description) for spec in keymap.KEYS
             if spec.scope == "app" and spec.show]
    assert keymap.fit_footer(items, 10_000) == items  # room: the full words
    for width in (160, 80, 40, 12):
        kept = keymap.fit_footer(items, width)
        assert sum(item.width for item in kept) <= width
        assert all(item.words in (keymap.spec(item.id or "").description, keymap.FOOTER_SHORT.get(item.id or ""))
                   for item in kept)
    narrow = [item.id for item in keymap.fit_footer(items, 40)]
    assert "cancel-run" in narrow and "toggle-tasks" not in narrow  # the run's stop stays, the panel's toggle goes


async def test_the_footer_during_a_run_fits_160_and_80_columns() -> None:
    client = recorded([endless_run()], delay=0.01)
    app = make_app(client)
    words = {spec.description for spec in keymap.KEYS} | set(keymap.FOOTER_SHORT.values())
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "go")
        await until(lambda: app.conversation.is_streaming, pilot)
        # the prompt focused (Esc stops the run), then the conversation (Esc goes back, c copies)
        for focus, shown in ((app.prompt, ("Stop", "Cancel the running agent")),
                             (app.view, ("Copy", "Copy the focused block"))):
            focus.focus()
            for width, height in ((160, 48), (80, 24)):
                await pilot.resize_terminal(width, height)
                await until(lambda shown=shown: any(k.description in shown for k in _keys(app)), pilot)
                await pilot.pause()
                keys = _keys(app)
                assert all(key.region.right <= width for key in keys), [(k.description, k.region) for k in keys]
                assert all(key.description in words for key in keys)  # whole words of the key table, never cut


async def test_the_footer_mounts_only_the_keys_that_change() -> None:
    """Textual's footer unmounted and mounted every key whenever the screen said its bindings
    changed (each focus change, each run's start and end): its whole row was dirty beside the
    answer, and the screen update that drew both cropped the whole screen (issue 44). Now an
    unchanged footer keeps its key widgets, and the run's "Stop" coming and going mounts or
    removes that key alone; what is shown is what a fresh footer shows.

    The run ends when the test says (its run-finish is published below, not scripted): with the
    end scripted, a busy machine's pauses (``pilot.pause`` waits up to a second while the process
    works) outlasted the rest of the run, and its end came between the two samples that were to be
    equal -- or before the first sample saw it running at all."""
    client = recorded([[*simple_run()[:-1], *text_deltas("more " * 200, size=5)]], delay=0.005)
    app = make_app(client)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "go")
        await until(lambda: app.conversation.is_streaming and any(k.description == "Stop" for k in _keys(app)),
                    pilot)
        during = _keys(app)
        app.refresh_bindings()
        app.refresh_bindings()
        await pilot.pause()
        await pilot.pause()
        assert app.conversation.is_streaming  # (the run is held: nothing changed)
        assert [id(k) for k in _keys(app)] == [id(k) for k in during]  # nothing changed: nothing mounted
        # the whole script streamed, then its end
        await until(lambda: app.view.assistant_turns()[-1].answer_text().endswith("more " * 200), pilot)
        client.publish(app.thread_id, ev("run-finish", run=app.conversation.active_run_id, status="completed"))
        await until(lambda: not app.conversation.is_streaming and all(k.description != "Stop" for k in _keys(app)),
                    pilot)
        await pilot.pause()
        after = _keys(app)
        kept = {id(k) for k in during}
        assert [k.description for k in after if id(k) not in kept] == []  # the end of the run mounted no key
        footer = app.screen.query_one(Footer)
        fresh = [key.words for key in footer._plan()]  # type: ignore[attr-defined]
        assert [k.description for k in after] == fresh


async def test_the_footers_stop_follows_the_run_when_the_terminal_has_not_the_focus() -> None:
    """Textual's footer skipped every bindings change while the app had not the terminal's focus
    (issue 44: "esc Stop" lingered after the run ended, seen in a tmux session in the background).

    The run ends when the test says (its run-finish is published below): a scripted end after
    500 deltas was not reached within 20 s on a busy machine."""
    client = recorded([simple_run()[:-1]], delay=0.005)
    app = make_app(client)
    async with app.run_test(size=(160, 48)) as pilot:
        await app.wait_until_ready()
        await send(pilot, app, "go")
        await until(lambda: app.conversation.is_streaming and any(k.description == "Stop" for k in _keys(app))
                    and app.view.assistant_turns()[-1].answer_text().endswith(ANSWER), pilot)
        app.app_focus = False  # the terminal window went to the background (Textual's AppBlur)
        client.publish(app.thread_id, ev("run-finish", run=app.conversation.active_run_id, status="completed"))
        await until(lambda: not app.conversation.is_streaming, pilot)
        await until(lambda: all(k.description != "Stop" for k in _keys(app)), pilot, what="Stop gone with the run")
        assert not app.app_focus
