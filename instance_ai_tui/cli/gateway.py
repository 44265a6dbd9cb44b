"""``python -m instance_ai_tui.cli.gateway``: share one local folder (read-only) with an n8n instance's AI
agent, alone (the TUI's ``--gateway DIR`` does the same beside a conversation). The gateway itself is
``client.gateway``."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from ..client.base import ClientError
from ..client.gateway import share_folder


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m instance_ai_tui.cli.gateway",
        description="Share one local folder (read-only) with an n8n instance's AI agent.",
    )
    parser.add_argument("--url", required=True, help="n8n base URL, e.g. http://127.0.0.1:5678")
    parser.add_argument("--dir", required=True, type=Path, help="the folder to share")
    parser.add_argument("--key", help="gateway key: a pairing token from n8n, or N8N_INSTANCE_AI_GATEWAY_API_KEY")
    parser.add_argument("--email", help="log in as this n8n user and pair (password: N8N_PASSWORD or prompt); "
                                        "it then pairs again by itself after n8n restarts")
    parser.add_argument("--allow", action="append", metavar="GLOB",
                        help="files readable without asking (repeatable); others need the user's decision")
    parser.add_argument("--confirm-reads-over", type=int, metavar="BYTES", help="ask before reading larger files")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return asyncio.run(share_folder(args.url, args.dir, key=args.key, email=args.email, allow=args.allow,
                                        confirm_reads_over=args.confirm_reads_over))
    except KeyboardInterrupt:
        return 130
    except (ClientError, OSError) as exc:
        print(f"gateway: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
