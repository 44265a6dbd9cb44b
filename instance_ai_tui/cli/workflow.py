"""``instance-ai workflow``: draw a workflow in the terminal, or list the workflows.

    instance-ai workflow show ID            the demo instance, or N8N_URL/N8N_API_KEY's n8n (embedded)
    instance-ai workflow show ID --url URL  an n8n by URL (logged in: --email, N8N_EMAIL/N8N_PASSWORD)
    instance-ai workflow show FILE.json     a workflow exported from n8n (or a tool result holding one)
    instance-ai workflow list

The drawing is the canvas of the app (``protocol.workflow_layout``): n8n's positions, branch labels, AI
sub-nodes under what they serve, sticky notes, and — after a run (the last one, or ``--execution ID``)
— each node's state, run count and items. No line is wider than ``--width`` (default: the terminal's
width; 80 when piped): a drawing too wide is zoomed out, then cut into bands of columns, each labelled
(``--crop``: only the first band, with a note of what was left out). On a terminal it is coloured;
piped or redirected it is plain text without escape codes. The title line carries n8n's editor URL.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .connection import add_connection_arguments

#: a workflow file larger than this is refused (n8n's largest templates are ~2 MB)
MAX_FILE_BYTES = 8_000_000
#: the narrowest drawing asked for
MIN_WIDTH = 30


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="action", required=True)
    show = sub.add_parser("show", help="draw one workflow (by id, or a .json file)",
                          description="draw one workflow: by id from n8n (or the demo), or from a JSON file "
                                      "exported from n8n")
    show.add_argument("workflow_id", metavar="ID|FILE.json", help="the workflow's id, or a JSON file")
    show.add_argument("--width", type=int, default=None, metavar="N",
                      help="no line wider than N columns (default: the terminal's width, 80 when piped)")
    show.add_argument("--compact", action="store_true", help="zoomed out: names only")
    show.add_argument("--crop", action="store_true",
                      help="a drawing wider than --width: only its first columns, with a note (default: bands)")
    show.add_argument("--execution", metavar="ID", default=None, help="show this execution's node states")
    show.add_argument("--no-run", action="store_true", help="leave out the last execution's node states")
    add_connection_arguments(show, model=False)
    listing = sub.add_parser("list", help="list the workflows (id and name)", description="list the workflows")
    add_connection_arguments(listing, model=False)


def main(args: argparse.Namespace) -> int:
    import asyncio

    from ..client.base import ClientError
    from .connection import settings_from_args

    try:
        if args.action == "show" and _is_file(args.workflow_id):
            return _show_file(args)
        return asyncio.run(_main(settings_from_args(args), args))
    except ClientError as exc:
        print(f"instance-ai workflow: {exc}", file=sys.stderr)
        return 1


def _is_file(value: str) -> bool:
    return value.lower().endswith(".json") or Path(value).is_file()


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
    from ..protocol.workflow_graph import parse_execution, parse_workflow

    workflow = parse_workflow(await source.get_workflow(args.workflow_id), workflow_id=args.workflow_id)
    wid = workflow.id or args.workflow_id
    if args.execution:
        execution = parse_execution(await source.execution(args.execution))
    elif args.no_run:
        execution = None
    else:
        execution = parse_execution(await source.last_execution(wid))
    _print(workflow, execution, args, source.editor_url(wid))
    return 0


def _show_file(args: argparse.Namespace) -> int:
    """A workflow from a JSON file: n8n's export, the REST's ``{"data": ...}``, or a tool result holding
    ``workflow``."""
    from ..protocol.safe_text import visible
    from ..protocol.workflow_graph import parse_workflow

    path = Path(args.workflow_id)
    what = visible(str(path))
    if args.execution:
        print("instance-ai workflow: --execution needs an n8n instance (a file holds no executions)", file=sys.stderr)
        return 2
    try:
        size = path.stat().st_size
        if size > MAX_FILE_BYTES:
            print(f"instance-ai workflow: {what} is {size // 1_000_000} MB; at most "
                  f"{MAX_FILE_BYTES // 1_000_000} MB are read", file=sys.stderr)
            return 1
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        print(f"instance-ai workflow: no file {what}", file=sys.stderr)
        return 1
    except (OSError, UnicodeDecodeError) as exc:
        print(f"instance-ai workflow: cannot read {what}: {visible(str(exc))}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f"instance-ai workflow: {what} is not JSON ({visible(str(exc))[:200]})", file=sys.stderr)
        return 1
    found = _workflow_in(data)
    if found is None:
        print(f"instance-ai workflow: {what} holds no workflow (no \"nodes\" list): export it from n8n's editor "
              "(… > Download) or pass the workflow JSON of a tool result", file=sys.stderr)
        return 1
    workflow = parse_workflow(found, workflow_id=path.stem)
    _print(workflow, None, args, None, origin=f"file {path.name}")
    return 0


def _workflow_in(data: Any, depth: int = 0) -> Any:
    """The workflow inside what a file holds (itself, ``data``, ``workflow``, or a one-item list)."""
    if depth > 4:
        return None
    if isinstance(data, list) and len(data) == 1:
        return _workflow_in(data[0], depth + 1)
    if isinstance(data, dict):
        if isinstance(data.get("nodes"), list):
            return data
        for key in ("data", "workflow", "result"):
            if key in data:
                found = _workflow_in(data[key], depth + 1)
                if found is not None:
                    return found
    return None


# --------------------------------------------------------------------------- fitting the width


@dataclass(slots=True)
class Fitted:
    """What is printed: note lines and drawing rows (cells and their styles)."""

    #: (text, style codes or None for a plain note line)
    lines: list[tuple[list[str], list[int] | None]]
    detail: Any
    #: connections the layout found no way for (not drawn)
    failed: int = 0


def fit(workflow: Any, width: int, *, runs: Any = None, compact: bool = False, crop: bool = False) -> Fitted:
    """The drawing in at most ``width`` columns: full detail if it fits, else zoomed out, else zoomed out
    further (names cut shorter) if that fits, else the zoomed-out drawing cut into bands of columns (each
    headed by a note of its columns and rows), or (``crop``) the first band and a note of what was left out."""
    from ..protocol.workflow_draw import draw
    from ..protocol.workflow_layout import Detail, layout_workflow

    width = max(MIN_WIDTH, width)
    layout = layout_workflow(workflow, Detail.COMPACT if compact else Detail.FULL, runs=runs)
    if layout.width > width and not compact:
        layout = layout_workflow(workflow, Detail.COMPACT, runs=runs)
    if layout.width > width:  # zoomed out further where that fits whole (else bands keep the longer names)
        tight = layout_workflow(workflow, Detail.TIGHT, runs=runs)
        if tight.width <= width:
            layout = tight
    lines: list[tuple[list[str], list[int] | None]] = []
    if layout.width <= width:
        drawing = draw(layout, runs=runs)
        lines += list(zip(drawing.chars, drawing.styles, strict=True))
        return Fitted(lines, layout.detail, len(layout.failed))
    starts = [0] if crop else band_starts(layout, width)
    ends = [*starts[1:], layout.width] if not crop else [min(layout.width, width)]
    for k, (x0, end) in enumerate(zip(starts, ends, strict=True)):
        drawing = draw(layout, runs=runs, window=(x0, 0, end - x0, layout.height))
        rows = [i for i, row in enumerate(drawing.chars) if any(c not in (" ", "") for c in row)]
        if not rows:
            continue
        first, last = rows[0], rows[-1]
        x1 = end - 1
        if crop:
            shown = {n for n, b in layout.boxes.items() if b.x < x0 + width}
            left_out = len(layout.boxes) - len(shown)
            note = (f"cropped: columns 0–{x1} of {layout.width}; {left_out} of {len(layout.boxes)} nodes are right of "
                    "it (without --crop: every column, in bands)")
        else:
            note = f"── band {k + 1}/{len(starts)}: columns {x0}–{x1} of {layout.width}, rows {first}–{last} ──"
        lines += [(list(text), None) for text in textwrap.wrap(note, width)]
        lines += list(zip(drawing.chars[first:last + 1], drawing.styles[first:last + 1], strict=True))
    return Fitted(lines, layout.detail, len(layout.failed))


def band_starts(layout: Any, width: int) -> list[int]:
    """Where the bands of a drawing wider than ``width`` begin: as few bands as the width allows, each cut
    placed (within what keeps every band at most ``width`` wide) where it goes through the fewest boxes,
    nearest the even split among those. Cut every ``width`` columns, a 161-column drawing at 80 gave a
    last band of one column (a box's right edge), and most cuts went through a box."""
    total = layout.width
    count = -(-total // width)
    # crossed[c]: boxes that a cut between columns c - 1 and c goes through (a box spans x .. x + w - 1)
    crossed = [0] * (total + 2)
    for box in layout.boxes.values():
        lo, hi = max(1, box.x + 1), min(total, box.x + box.w - 1)
        if lo <= hi:
            crossed[lo] += 1
            crossed[hi + 1] -= 1
    for c in range(1, total + 1):
        crossed[c] += crossed[c - 1]
    starts = [0]
    for k in range(1, count):
        lo = max(starts[-1] + 1, total - (count - k) * width)
        hi = min(starts[-1] + width, total - 1)
        even = round(k * total / count)
        starts.append(min(range(lo, hi + 1), key=lambda c: (crossed[c], abs(c - even))))
    return starts


def _print(workflow: Any, execution: Any, args: argparse.Namespace, editor_url: str | None, *,
           origin: str = "") -> None:
    from ..protocol.safe_text import visible
    from ..protocol.workflow_layout import Detail

    width = args.width if args.width is not None else (shutil.get_terminal_size((80, 24)).columns
                                                          if sys.stdout.isatty() else 80)
    runs = execution.runs if execution is not None and execution.runs else None
    fitted = fit(workflow, width, runs=runs, compact=args.compact, crop=args.crop)
    parts = [workflow.name or "(unnamed)", workflow.id or "(no id)", f"{len(workflow.nodes)} nodes"]
    if origin:
        parts.append(origin)
    if editor_url:
        parts.append(editor_url)
    title = " · ".join(parts)
    notes = []
    if execution is not None:
        note = f"execution {execution.id}: {execution.status}"
        if execution.error:
            note += f" ({execution.error})"
        notes.append(note)
    if fitted.failed:
        notes.append(f"{fitted.failed} connection{'s' if fitted.failed != 1 else ''} found no way through the "
                     "drawing and are not drawn")
    if fitted.detail is Detail.COMPACT and not args.compact:
        notes.append(f"zoomed out to fit {max(MIN_WIDTH, width)} columns (names only)")
    elif fitted.detail is Detail.TIGHT:
        notes.append(f"zoomed out further to fit {max(MIN_WIDTH, width)} columns (names cut shorter)")
    out_lines = textwrap.wrap(visible(title), max(MIN_WIDTH, width))
    out_lines += [line for note in notes for line in textwrap.wrap(visible(note), max(MIN_WIDTH, width))]
    if sys.stdout.isatty():
        _print_coloured(out_lines, fitted)
    else:
        text = "\n".join(out_lines) + "\n\n"
        text += "\n".join("".join(chars).rstrip() for chars, _styles in fitted.lines) + "\n"
        sys.stdout.write(text)


def _print_coloured(head: list[str], fitted: Fitted) -> None:
    from rich.console import Console
    from rich.text import Text

    from ..protocol.workflow_draw import Style

    colours = {Style.BORDER: "grey62", Style.EDGE: "grey70", Style.AI_EDGE: "magenta", Style.LABEL: "cyan",
               Style.TRIGGER: "bold yellow", Style.ACTION: "bold", Style.AI: "bold magenta", Style.FLOW: "bold cyan",
               Style.MUTED: "grey50", Style.RAN: "green", Style.FAILED: "bold red", Style.NOT_REACHED: "grey50",
               Style.NEW: "bold green", Style.CHANGED: "bold yellow", Style.ARROW: "grey70", Style.DISABLED: "grey50",
               Style.NOTE: "yellow dim", Style.ERROR_EDGE: "red",
               Style.NOTE_YELLOW: "yellow", Style.NOTE_GOLD: "dark_goldenrod", Style.NOTE_RED: "red",
               Style.NOTE_GREEN: "green", Style.NOTE_BLUE: "blue", Style.NOTE_PURPLE: "medium_purple",
               Style.NOTE_GREY: "grey62",
               # a note's inside: its text as before (a printed drawing gets no background: any terminal reads it)
               **dict.fromkeys(range(Style.NOTE_FILL_YELLOW, Style.NOTE_FILL_GREY + 1), "yellow dim")}
    console = Console(highlight=False, soft_wrap=True)
    for line in head:
        console.print(Text(line, style="bold"))
    console.print()
    for chars, styles in fitted.lines:
        text = Text()
        if styles is None:
            text.append("".join(chars), "dim")
        else:
            for char, style in zip(chars, styles, strict=True):
                text.append(char, colours.get(Style(style), "")) if style else text.append(char)
        text.rstrip()
        console.print(text)
