"""Screenshots of the real app, driven headless through a real session with the demo model.

Run::

    python scripts/screenshots.py [--out screenshots] [--size 120x40] [--png]
                                              [--only NAME ...] [--timeout 60]

It starts ``InstanceAiApp(EmbeddedClient(settings), settings)`` with the offline demo model
on a temporary SQLite file, inside ``App.run_test`` (no terminal needed). Config and data
dirs point at a temporary folder, so the user's own config, themes and threads are neither
read nor changed. Then, like a user would:

1. asks "Every morning at 8, send the weather forecast for Berlin to Slack": the plan, the
   builder sub-agent, tool calls and the approval card appear -> ``approval-card.svg``;
2. approves with ``y`` and waits for the answer -> ``conversation-subagents.svg`` (the
   sub-agent section expanded) and ``task-checklist.svg`` (the checklist panel);
3. has two short exchanges in new threads ("Hello!", "Which workflows do I have?"), then
   opens another and asks the vague "Build me a workflow": the agent asks questions
   -> ``questions-wizard.svg``;
4. focuses the thread sidebar -> ``thread-list.svg``;
5. goes back to the first thread in two other themes -> ``theme-instance-light.svg`` and
   ``theme-instance-ansi.svg``.

Each screenshot is an SVG (``App.save_screenshot``); ``--png`` also converts them with
``rsvg-convert`` when it is installed. ``--only`` limits the files written (the session
still runs in full). Exit status: 0 when every screenshot was written, 1 when a step
timed out (the message says which), 2 when the app or the embedded assistant is missing.

``SHOTS`` lists the file names; ``take_screenshots(out, size=(120, 40), only=None,
timeout=60.0) -> list[Path]`` is the coroutine behind the command.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

__all__ = ["SHOTS", "StepTimeout", "main", "take_screenshots"]

SHOTS: tuple[str, ...] = (
    "approval-card",
    "conversation-subagents",
    "task-checklist",
    "questions-wizard",
    "thread-list",
    "theme-instance-light",
    "theme-instance-ansi",
)

BUILD_REQUEST = "Every morning at 8, send the weather forecast for Berlin to Slack"
VAGUE_REQUEST = "Build me a workflow"
SHORT_REQUESTS = ("Hello!", "Which workflows do I have?")
#: the app ignores keys for 0.5 s after a card appears (no accidental approvals)
CARD_GRACE = 0.6


class StepTimeout(Exception):
    """A step of the session did not reach the expected state in time."""


async def _wait_for(what: str, predicate: Callable[[], Any], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise StepTimeout(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


def _isolate(tmp: Path) -> None:
    """Point config and data dirs at ``tmp`` (read at call time by ``config``)."""
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    os.environ["XDG_DATA_HOME"] = str(tmp / "data")
    os.environ["INSTANCE_AI_CONFIG"] = str(tmp / "config" / "instance-ai" / "config.toml")
    for name in ("INSTANCE_AI_MODEL", "OPENAI_API_KEY", "OPENAI_BASE_URL", "INSTANCE_AI_DB", "TEXTUAL_THEME"):
        os.environ.pop(name, None)


async def take_screenshots(
    out: Path,
    *,
    size: tuple[int, int] = (120, 40),
    only: Sequence[str] | None = None,
    timeout: float = 60.0,
) -> list[Path]:
    """Run the session and write the SVGs into ``out``. Returns the files written."""
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import ModelSettings, Settings, UiSettings
    from instance_ai_tui.tui.app import InstanceAiApp

    wanted = set(only or SHOTS)
    unknown = wanted - set(SHOTS)
    if unknown:
        raise ValueError(f"unknown screenshot name(s) {', '.join(sorted(unknown))}; names: {', '.join(SHOTS)}")
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - a dev script, once at start
    written: list[Path] = []

    with tempfile.TemporaryDirectory(prefix="instance-ai-shots-") as tmp_name:
        tmp = Path(tmp_name)
        _isolate(tmp)
        (tmp / "workspace").mkdir()
        settings = Settings(
            model=ModelSettings(name="demo"),
            db_path=tmp / "screenshots.sqlite3",
            workspace_root=tmp / "workspace",
            ui=UiSettings(theme="instance-dark"),
        )
        client = EmbeddedClient(settings)
        await client.open()  # fails here, with the reason, if a part of the assistant is missing
        app = InstanceAiApp(client, settings, watch_themes=False, persist_theme=False)

        async with app.run_test(size=size) as pilot:

            async def settle() -> None:
                await app.wait_until_rendered(timeout=timeout)
                await pilot.pause()

            def shot(name: str) -> None:
                if name in wanted:
                    path = Path(app.save_screenshot(f"{name}.svg", path=str(out)))
                    written.append(path)
                    print(f"wrote {path}")

            await app.wait_until_ready(timeout=timeout)
            if app.theme_manager is not None:
                await app.theme_manager.wait_loaded()
            await pilot.pause()

            # 1. a build request: plan, sub-agent, tool calls, then the approval card
            await app.thread.outbox.send(BUILD_REQUEST)
            await _wait_for("the approval card", lambda: bool(app.thread.pending), timeout)
            await settle()
            await asyncio.sleep(CARD_GRACE)
            await settle()
            shot("approval-card")

            # 2. approve with the key a user presses, wait for the final answer
            app.cards.go_to()
            await pilot.pause()
            await pilot.press("y")
            conversation = app.conversation
            await _wait_for(
                "the end of the run",
                lambda: conversation is not None and not conversation.is_streaming and not app.thread.pending,
                timeout,
            )
            await settle()
            first_thread = app.thread_id
            _expand_subagents(app)
            app.view.follow()
            await settle()
            shot("conversation-subagents")
            if not app.tasks_panel.display:
                app.action_toggle_tasks()
            app.tasks_panel.focus()
            await settle()
            shot("task-checklist")

            # two short threads, so the sidebar has something to show
            for request in SHORT_REQUESTS:
                await _new_thread(app, timeout)
                await app.thread.outbox.send(request)
                await _wait_for("a thread", lambda: app.thread_id is not None, timeout)
                await _wait_for(f"the answer to {request!r}", _answered(app.conversation), timeout)
                await settle()

            # 3. a vague request in a new thread: the agent asks questions
            await _new_thread(app, timeout)
            await settle()
            await app.thread.outbox.send(VAGUE_REQUEST)
            await _wait_for("the questions", lambda: bool(app.thread.pending), timeout)
            await settle()
            await asyncio.sleep(CARD_GRACE)
            app.cards.go_to()
            app.view.follow()  # the whole card, at the bottom
            await settle()
            shot("questions-wizard")

            # 4. the thread sidebar
            threads = app.thread_list
            threads.display = True
            threads.focus_list()
            await settle()
            shot("thread-list")

            # 5. the first thread in two more themes
            if first_thread is not None:
                await app.threads.open(first_thread)
                await settle()
                _expand_subagents(app)
                app.view.follow()
            for theme in ("instance-light", "instance-ansi"):
                app.theme = theme
                app.prompt.focus()
                await settle()
                shot(f"theme-{theme}")
    return written


async def _new_thread(app: Any, timeout: float) -> None:
    """What Ctrl+N does, then wait until the empty thread is shown."""
    app.action_new_thread()
    await _wait_for("a new thread", lambda: app.thread_id is None, timeout)


def _expand_subagents(app: Any) -> None:
    """Open every completed sub-agent section (they collapse to a summary when done)."""
    from instance_ai_tui.tui.widgets.turns import SubAgentSection

    for section in app.query(SubAgentSection):
        if not section.expanded:
            section.action_toggle_block()


def _to_png(paths: Sequence[Path]) -> None:
    converter = shutil.which("rsvg-convert")
    if converter is None:
        print("--png: rsvg-convert is not installed (apt-get install librsvg2-bin fonts-firacode)", file=sys.stderr)
        return
    for svg in paths:
        png = svg.with_suffix(".png")
        subprocess.run([converter, "-w", "1600", str(svg), "-o", str(png)], check=True)
        print(f"wrote {png}")


def _size(text: str) -> tuple[int, int]:
    try:
        width, height = (int(part) for part in text.lower().split("x"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not WIDTHxHEIGHT, e.g. 120x40") from None
    if width < 40 or height < 12:
        raise argparse.ArgumentTypeError("the terminal must be at least 40x12")
    return width, height


def _answered(conversation: Any) -> Callable[[], bool]:
    """Whether ``conversation`` has its answer (bound now, not when the check runs)."""
    return lambda: conversation is not None and bool(conversation.messages) and not conversation.is_streaming


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python scripts/screenshots.py",
        description="Drive the app headless through a demo session and write SVG screenshots.",
    )
    parser.add_argument("--out", type=Path, default=Path("screenshots"), help="output folder (default: ./screenshots)")
    parser.add_argument("--size", type=_size, default=(120, 40), help="terminal size WIDTHxHEIGHT (default 120x40)")
    parser.add_argument("--only", nargs="+", choices=SHOTS, metavar="NAME", help=f"only these: {', '.join(SHOTS)}")
    parser.add_argument("--png", action="store_true", help="also write PNGs with rsvg-convert")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds allowed per step (default 60)")
    args = parser.parse_args(argv)
    from instance_ai_tui.client.base import ClientError

    try:
        written = asyncio.run(take_screenshots(args.out, size=args.size, only=args.only, timeout=args.timeout))
    except StepTimeout as exc:
        print(f"screenshots: {exc}", file=sys.stderr)
        return 1
    except ImportError as exc:
        print(f"screenshots: a part of the app is missing ({exc})", file=sys.stderr)
        return 2
    except ClientError as exc:
        print(f"screenshots: the embedded assistant did not start: {exc}", file=sys.stderr)
        return 2
    if args.png:
        _to_png(written)
    return 0


if __name__ == "__main__":
    sys.exit(main())
