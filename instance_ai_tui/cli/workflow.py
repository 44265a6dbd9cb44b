"""``instance-ai workflow``: draw a workflow in the terminal, or list the workflows.

    instance-ai workflow show ID            the demo instance, or N8N_URL/N8N_API_KEY's n8n (embedded)
    instance-ai workflow show ID --url URL  an n8n by URL (logged in: --email, N8N_EMAIL/N8N_PASSWORD)
    instance-ai workflow list

The drawing is the canvas of the app (``protocol.workflow_layout``): boxes left to right, branch labels,
AI sub-nodes under their agent, and — after a run — each node's state as a glyph and a word. On a
terminal it is coloured; piped or redirected it is plain text without escape codes.
"""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .connection import add_connection_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="draw one workflow", description="draw one workflow")
    show.add_argument("workflow_id", metavar="ID", help="the workflow's id")
    show.add_argument("--compact", action="store_true", help="zoomed out: names only")
    show.add_argument("--no-run", action="store_true", help="leave out the last execution's node states")
    add_connection_arguments(show, model=False)
    listing = sub.add_parser("list", help="list the workflows (id and name)", description="list the workflows")
    add_connection_arguments(listing, model=False)


def main(args: argparse.Namespace) -> int:
    import asyncio

    from ..client.base import ClientError
    from .connection import settings_from_args

    try:
        return asyncio.run(_main(settings_from_args(args), args))
    except ClientError as exc:
        print(f"instance-ai workflow: {exc}", file=sys.stderr)
        return 1


async def _main(settings: Any, args: argparse.Namespace) -> int:
    import contextlib

    async with contextlib.AsyncExitStack() as stack:
        source = await _source(settings, args, stack)
        if source is None:
            print("instance-ai workflow: this server cannot read workflows (it serves conversations): pass --url "
                  "with an n8n instance, or run without --url (N8N_URL and N8N_API_KEY, or the demo)", file=sys.stderr)
            return 1
        if args.action == "list":
            return await _list(source)
        return await _show(source, args)
    return 1


async def _source(settings: Any, args: argparse.Namespace, stack: Any) -> Any:
    """n8n by ``--url`` (its REST with a login session); else the n8n the embedded assistant's tools
    use: the public API of ``N8N_URL``/``N8N_API_KEY``, or the demo instance kept in the SQLite file
    (read directly: starting the assistant would also recover its runs, which belong to the app)."""
    from ..client.workflows import BackendSource, workflow_source

    if args.url:
        from ..client.factory import open_client

        client = await open_client(settings)
        stack.push_async_callback(client.close)
        return workflow_source(client)
    key = settings.n8n_api_key
    if settings.n8n_url and key is not None and key.get_secret_value():
        from ..assistant.n8n_client import N8nPublicApi

        api = N8nPublicApi(settings.n8n_url, key)
        stack.push_async_callback(api.aclose)
        return BackendSource(api)
    from ..assistant.demo_instance import DemoN8n
    from ..store.sqlite import SqliteStore

    path = settings.resolved_db_path
    if not path.exists():  # nothing saved yet: the demo's seeded instance, without creating a file
        return BackendSource(DemoN8n())
    store = SqliteStore(path)
    await store.open()
    stack.push_async_callback(store.close)
    return BackendSource(DemoN8n(store))


async def _list(source: Any) -> int:
    from ..protocol.safe_text import visible

    rows = await source.list_workflows()
    if not rows:
        print(f"no workflows in {source.label}", file=sys.stderr)
        return 0
    width = max(len(str(r.get("id", ""))) for r in rows)
    for row in rows:
        count = row.get("nodeCount")
        nodes = f"  ({count} nodes)" if isinstance(count, int) else ""
        print(visible(f"{row.get('id', '')!s:<{width}}  {row.get('name') or '(unnamed)'}{nodes}"))
    return 0


async def _show(source: Any, args: argparse.Namespace) -> int:
    from ..protocol.workflow_draw import draw
    from ..protocol.workflow_graph import parse_execution, parse_workflow
    from ..protocol.workflow_layout import Detail, layout_workflow

    workflow = parse_workflow(await source.get_workflow(args.workflow_id), workflow_id=args.workflow_id)
    execution = None if args.no_run else parse_execution(await source.last_execution(workflow.id or args.workflow_id))
    runs = execution.runs if execution is not None else None
    detail = Detail.COMPACT if args.compact else Detail.FULL
    drawing = draw(layout_workflow(workflow, detail, runs=runs or None), runs=runs or None)
    title = f"{workflow.name or '(unnamed)'} · {workflow.id or args.workflow_id} · {len(workflow.nodes)} nodes"
    if execution is not None:
        title += f" · last execution {execution.id}: {execution.status}"
        if execution.error:
            title += f" ({execution.error})"
    if sys.stdout.isatty():
        _print_coloured(title, drawing)
    else:
        sys.stdout.write(title + "\n\n" + drawing.text())
    return 0


def _print_coloured(title: str, drawing: Any) -> None:
    from rich.console import Console
    from rich.text import Text

    from ..protocol.workflow_draw import Style

    colours = {Style.BORDER: "grey62", Style.EDGE: "grey70", Style.AI_EDGE: "magenta", Style.LABEL: "cyan",
               Style.TRIGGER: "bold yellow", Style.ACTION: "bold", Style.AI: "bold magenta", Style.FLOW: "bold cyan",
               Style.MUTED: "grey50", Style.RAN: "green", Style.FAILED: "bold red", Style.NOT_REACHED: "grey50",
               Style.NEW: "bold green", Style.CHANGED: "bold yellow", Style.ARROW: "grey70", Style.DISABLED: "grey50"}
    console = Console(highlight=False, soft_wrap=True)
    console.print(Text(title, style="bold"))
    console.print()
    for chars, styles in zip(drawing.chars, drawing.styles, strict=True):
        line = Text()
        for char, style in zip(chars, styles, strict=True):
            line.append(char, colours.get(Style(style), "")) if style else line.append(char)
        line.rstrip()
        console.print(line)
