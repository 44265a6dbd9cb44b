"""One command registry (``tui.commands``): every command is a slash command, a palette entry,
a row of ``/help``, a word of the prompt's help and of the "unknown command" message."""

from __future__ import annotations

from instance_ai_tui.tui import commands
from instance_ai_tui.tui.screens.help import HelpScreen
from tests.support.waiting import until

from .scripts import SIZE, endless_run, make_app, recorded
from .test_interactions import send


def palette_titles(app: object) -> list[str]:
    return [command.title for command in app.get_system_commands(app.screen)]  # type: ignore[attr-defined]


async def test_every_command_appears_everywhere() -> None:
    client = recorded([endless_run()], delay=0.01)
    app = make_app(client)
    async with app.run_test(size=SIZE) as pilot:
        await app.wait_until_ready()
        names = [c.name for c in commands.COMMANDS]
        assert len(names) == len(set(names)) and "retry" in names and "quit" in names

        # /help: one row per command
        await send(pilot, app, "/help")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        help_text = app.screen.markdown
        await pilot.press("escape")
        # F1 in the prompt: the prompt's help names every command
        app.prompt.focus()
        await pilot.press("f1")
        await until(lambda: isinstance(app.screen, HelpScreen), pilot)
        prompt_help = app.screen.markdown
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, HelpScreen), pilot)
        # an unknown command: the message lists every command, and nothing is sent
        await send(pilot, app, "/frobnicate")
        await until(lambda: any("Unknown command /frobnicate" in n.message for n in app._notifications), pilot)
        unknown = next(n.message for n in app._notifications if "Unknown command" in n.message)
        assert not [c for c in client.calls if c[0] == "send"]
        app.prompt.clear()
        idle_palette = palette_titles(app)

        for command in commands.COMMANDS:
            assert f"| `{command.usage}` |" in help_text, command.name
            assert f"`{command.usage}`" in prompt_help, command.name
            assert f"/{command.name}" in unknown.split(), command.name
            if command.available is None:
                assert idle_palette.count(command.title) == 1, command.name
        # nothing to cancel, nothing waiting: those two are not offered
        assert "Cancel run" not in idle_palette and "Go to pending approval" not in idle_palette
        # Textual's own "Quit" and "Theme" are replaced, not doubled
        assert idle_palette.count("Quit") == 1 and idle_palette.count("Theme") == 1

        # a new slash command of the registry works: /tasks toggles the checklist
        shown = app.tasks_panel.display
        await send(pilot, app, "/tasks")
        await until(lambda: app.tasks_panel.display != shown, pilot)

        # while a run streams, "Cancel run" is offered, and /cancel stops it
        await send(pilot, app, "write a lot")
        await until(lambda: app.conversation is not None and app.conversation.is_streaming, pilot)
        assert "Cancel run" in palette_titles(app)
        await send(pilot, app, "/cancel")
        await until(lambda: ("cancel", app.thread_id) in client.calls, pilot)
        await until(lambda: not app.conversation.is_streaming, pilot)
        assert "Cancel run" not in palette_titles(app)


def test_aliases_and_what_is_not_a_command() -> None:
    assert commands.find("EXIT") is commands.find("quit")
    assert commands.find("nope") is None
    assert commands.looks_like_command("/frobnicate") == "frobnicate"
    assert commands.looks_like_command("/usr/bin is a path") is None
    assert commands.looks_like_command("/ 2 is a fraction") is None
