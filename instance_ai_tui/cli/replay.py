"""``instance-ai replay FILE``: fold a recorded event stream into an agent tree and print it (``replay.replay``)."""

from __future__ import annotations

import argparse

from ..replay import replay


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "file", metavar="FILE", help="recorded stream: raw SSE text or JSON lines of events ('-' reads stdin)"
    )
    parser.add_argument(
        "--json", action="store_true", help="print the agent tree JSON (a list of messages if several groups)"
    )
    parser.add_argument("--ascii", action="store_true", help="draw the text tree without emoji or box characters")


def main(args: argparse.Namespace) -> int:
    return replay(args.file, as_json=args.json, ascii=args.ascii)
