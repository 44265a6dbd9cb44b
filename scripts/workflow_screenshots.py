"""Screenshots of the workflow canvas, from the real app driven headless (issue 29).

Run::

    python scripts/workflow_screenshots.py [--out screenshots]
        [--n8n URL --email EMAIL --password PASSWORD --workflow ID]

Like ``scripts/screenshots.py``: ``InstanceAiApp(EmbeddedClient(settings), settings)`` with the offline
demo model on a temporary SQLite file, inside ``App.run_test``, config and data dirs in a temporary folder.
Then, as a person would:

1. at 80×24, asks "every morning send the weather forecast to Slack": on a screen this narrow the
   builder's create-workflow call does not open the canvas by itself, a note names ``/workflow``; it is
   typed, and the canvas opens across the screen -> ``workflow-live-80x24.svg``;
2. the same at 160×48, where the call opens the canvas beside the conversation
   -> ``workflow-live-160x48.svg``;
3. at 120×40, an AI agent workflow (model, memory, two tools; created in the demo instance the way a
   tool call creates one) opened with ``/workflow ID``, widened with ``m``, a node's details with Enter
   -> ``workflow-ai-agent.svg``;
4. with ``--n8n``: the app connected to that real n8n by URL, ``/workflow ID`` on a workflow that ran and
   failed -> ``workflow-failed-node.svg`` (which node failed, which ran, which were not reached).

Exit status: 0 when every screenshot was written, 1 when a step timed out.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

BUILD_REQUEST = "every morning send the weather forecast to Slack"


async def _wait_for(what: str, predicate: Callable[[], Any], timeout: float = 60.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.05)


def _isolate(tmp: Path) -> None:
    os.environ["XDG_CONFIG_HOME"] = str(tmp / "config")
    os.environ["XDG_DATA_HOME"] = str(tmp / "data")


async def _demo_app(tmp: Path, name: str) -> Any:
    from instance_ai_tui.client.embedded import EmbeddedClient
    from instance_ai_tui.config import ModelSettings, Settings, UiSettings
    from instance_ai_tui.tui.app import InstanceAiApp

    settings = Settings(model=ModelSettings(name="demo"), db_path=tmp / f"{name}.sqlite3",
                        ui=UiSettings(theme="instance-dark"))
    client = EmbeddedClient(settings)
    await client.open()
    return InstanceAiApp(client, settings, watch_themes=False, persist_theme=False)


async def _settle(app: Any, pilot: Any) -> None:
    await app.wait_until_rendered(timeout=60)
    await pilot.pause(0.3)


async def live_build(out: Path, tmp: Path, size: tuple[int, int]) -> Path:
    from instance_ai_tui.tui.screens.workflow import AUTO_OPEN_MIN_WIDTH, panel_of

    def shown() -> bool:
        panel = panel_of(app.main_screen)
        return panel is not None and panel.workflow_id is not None

    app = await _demo_app(tmp, f"live-{size[0]}")
    async with app.run_test(size=size) as pilot:
        await app.wait_until_ready(timeout=60)
        await app.thread.outbox.send(BUILD_REQUEST)
        await _wait_for("the approval card", lambda: bool(app.thread.pending))
        if size[0] < AUTO_OPEN_MIN_WIDTH:
            # a narrow screen does not open the panel by itself (it would leave the conversation and the
            # card too narrow): a note names /workflow, and the person types it
            await _wait_for("the note naming /workflow",
                            lambda: any("/workflow" in str(n.message) for n in app._notifications))
            app.prompt.focus()
            await pilot.press(*"/workflow")
            await pilot.press("enter")
        await _wait_for("the canvas", shown)
        await asyncio.sleep(0.6)
        await _settle(app, pilot)
        return Path(app.save_screenshot(f"workflow-live-{size[0]}x{size[1]}.svg", path=str(out)))


async def ai_agent(out: Path, tmp: Path) -> Path:
    from instance_ai_tui.tui.screens.workflow import panel_of
    from tests.protocol.workflow_shapes import ai_agent as shape

    app = await _demo_app(tmp, "ai")
    async with app.run_test(size=(120, 40)) as pilot:
        await app.wait_until_ready(timeout=60)
        created = await app.client.service.n8n.create_workflow({**shape(), "settings": {}})
        app.prompt.load_text(f"/workflow {created['id']}")
        await pilot.press("enter")
        await _wait_for("the canvas", lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).workflow_id is not None)
        await pilot.press("m")
        await pilot.press("right")
        await pilot.press("enter")
        await _settle(app, pilot)
        return Path(app.save_screenshot("workflow-ai-agent.svg", path=str(out)))


async def failed_node(out: Path, url: str, email: str, password: str, workflow_id: str) -> Path:
    from instance_ai_tui.client.n8n import N8nClient
    from instance_ai_tui.config import Settings, UiSettings
    from instance_ai_tui.tui.app import InstanceAiApp
    from instance_ai_tui.tui.screens.workflow import panel_of

    client = N8nClient(url, email, password, interactive=False)
    app = InstanceAiApp(client, Settings(ui=UiSettings(theme="instance-dark")), watch_themes=False,
                        persist_theme=False)
    async with app.run_test(size=(120, 32)) as pilot:
        await app.wait_until_ready(timeout=60)
        app.prompt.load_text(f"/workflow {workflow_id}")
        await pilot.press("enter")
        await _wait_for("the canvas", lambda: panel_of(app.main_screen) is not None and panel_of(app.main_screen).execution is not None)
        await pilot.press("m")
        await pilot.press("right")
        await pilot.press("enter")
        await _settle(app, pilot)
        return Path(app.save_screenshot("workflow-failed-node.svg", path=str(out)))


async def run(args: argparse.Namespace) -> list[Path]:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # noqa: ASYNC240 - a dev script, once at start
    written = []
    with tempfile.TemporaryDirectory(prefix="instance-ai-wf-shots-") as name:
        tmp = Path(name)
        _isolate(tmp)
        for step in (lambda: live_build(out, tmp, (80, 24)), lambda: live_build(out, tmp, (160, 48)),
                     lambda: ai_agent(out, tmp)):
            written.append(await step())
            print(f"wrote {written[-1]}", file=sys.stderr)
        if args.n8n:
            written.append(await failed_node(out, args.n8n, args.email, args.password, args.workflow))
    return written


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default="screenshots")
    parser.add_argument("--n8n", help="a real n8n's URL (for workflow-failed-node.svg)")
    parser.add_argument("--email")
    parser.add_argument("--password")
    parser.add_argument("--workflow", help="the id of a workflow that ran and failed there")
    args = parser.parse_args(argv)
    try:
        written = asyncio.run(run(args))
        print(f"{len(written)} screenshots in {args.out}")
    except TimeoutError as exc:
        print(f"workflow_screenshots: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
