"""``instance-ai export THREAD --format md|json [-o FILE]``: a thread as Markdown or JSON.

The export is built from the thread's history (agent trees included) folded by
``protocol.conversation.Conversation``, with the thread's token/cost total when the backend
keeps one (``usage``); ``protocol.transcript`` redacts secrets.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .connection import add_connection_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("thread", help="thread id")
    parser.add_argument("--format", choices=("md", "json"), default="md", help="output format (default: md)")
    parser.add_argument("-o", "--output", type=Path, help="write to this file instead of stdout")
    add_connection_arguments(parser, model=False)


def main(args: argparse.Namespace) -> int:
    import asyncio

    from .connection import settings_from_args

    text = asyncio.run(export_thread(settings_from_args(args), args.thread, args.format))  # (cli.main: ClientError)
    if args.output is None:
        sys.stdout.write(text)
        return 0
    try:
        args.output.write_text(text, encoding="utf-8")
    except OSError as exc:
        print(f"instance-ai export: cannot write {args.output}: {exc}", file=sys.stderr)
        return 1
    print(f"exported {args.thread} to {args.output}", file=sys.stderr)
    return 0


async def export_thread(settings: object, thread_id: str, fmt: str) -> str:
    """The thread ``thread_id`` as Markdown (``md``) or JSON (``json``)."""
    from ..client.factory import open_client
    from ..protocol.conversation import Conversation
    from ..protocol.transcript import to_json, to_markdown

    client = await open_client(settings)  # type: ignore[arg-type]
    try:
        history = await client.messages(thread_id)
        info = next((t for t in await client.list_threads() if t.id == thread_id), None)
    finally:
        await client.close()
    conversation = Conversation(thread_id)
    conversation.load_history(history)
    if info is not None and info.title:
        conversation.title = info.title
    # the thread's token/cost total (assistant.usage): with the history, else from the thread list
    metadata = history.metadata if history.metadata is not None else (info.metadata if info is not None else {})
    usage = metadata.get("usage") if isinstance(metadata.get("usage"), dict) else None
    if fmt == "json":
        return to_json(conversation, usage=usage).rstrip("\n") + "\n"
    return to_markdown(conversation, usage=usage)
