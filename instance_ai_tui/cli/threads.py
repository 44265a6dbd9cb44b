"""``instance-ai threads``: list the threads (embedded, or of the server at ``--url``)."""

from __future__ import annotations

import argparse
import sys

from .connection import add_connection_arguments


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the threads as a JSON array")
    add_connection_arguments(parser)


def main(args: argparse.Namespace) -> int:  # (a ClientError: ``cli.main`` says it, exit code 1)
    import asyncio

    from .connection import settings_from_args

    return asyncio.run(_main(settings_from_args(args), args.json))


async def _main(settings: object, as_json: bool) -> int:
    import json

    from ..client.factory import open_client
    from ..protocol.safe_text import json_safe, visible

    client = await open_client(settings)  # type: ignore[arg-type]
    try:
        threads = await client.list_threads()
    finally:
        await client.close()
    if as_json:
        print(json_safe(json.dumps([thread.to_wire() for thread in threads], ensure_ascii=False, indent=2)))
        return 0
    if not threads:
        print("no threads yet", file=sys.stderr)
        return 0
    width = max(len(thread.id) for thread in threads)
    for thread in threads:
        updated = thread.updated_at.strftime("%Y-%m-%d %H:%M")
        print(visible(f"{thread.id:<{width}}  {updated}  {thread.title or '(untitled)'}"))
    return 0
