"""``instance-ai serve``: the HTTP/SSE server on uvicorn.

Binds 127.0.0.1 by default. Any other host needs a token (``--token`` or ``INSTANCE_AI_TOKEN``);
the server refuses to start without one. SIGTERM and SIGINT shut down gracefully: active runs
end with ``run-finish {cancelled, service_shutdown}``, SSE streams get it and close, suspended
runs stay in the database and can be confirmed after the next start.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

DEFAULT_PORT = 5680
TOKEN_ENV = "INSTANCE_AI_TOKEN"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default: {DEFAULT_PORT})")
    parser.add_argument("--token", help=f"require 'Authorization: Bearer <token>' (or set {TOKEN_ENV}); "
                                        "not blank, no spaces")
    parser.add_argument("--db", type=Path, help="SQLite file (default: the platform data dir)")
    parser.add_argument("--model", help="model name ('demo' = the offline demo model)")
    parser.add_argument("--workspace", type=Path, help="folder the agent's file tools may use")
    from .connection import add_mcp_argument

    add_mcp_argument(parser)
    parser.add_argument("--ping-interval", type=float, default=15.0, help="seconds between SSE keep-alive comments")
    parser.add_argument(
        "--demo-delay", type=float, default=0.0, help="seconds between the demo model's streamed pieces (default: 0)"
    )
    parser.add_argument("--log-level", default="info", choices=("debug", "info", "warning", "error"))
    parser.add_argument("--redis", metavar="URL",
                        help="share threads with other 'serve' processes through Redis, e.g. redis://127.0.0.1:6379/0 "
                             "(or set INSTANCE_AI_REDIS_URL); replaces the SQLite file")
    parser.add_argument("--instance-id", help="this process's name in logs and run ownership (with --redis; "
                                              "default: hostname-pid-random)")
    parser.add_argument("--lease-ms", type=int, default=15_000,
                        help="with --redis: ms after which a crashed process's runs are taken over (default: 15000)")


def main(args: argparse.Namespace) -> int:
    from ..web.access import is_loopback

    token = args.token if args.token is not None else os.environ.get(TOKEN_ENV) or None
    if token is not None and (not token.strip() or token != token.strip() or any(c.isspace() for c in token)
                              or not token.isprintable()):
        print(f"instance-ai serve: the token must not be blank or contain spaces or control characters "
              f"(from {'--token' if args.token is not None else TOKEN_ENV})", file=sys.stderr)
        return 2
    if not is_loopback(args.host) and not token:
        print(
            f"instance-ai serve: refusing to listen on {args.host} without a token; "
            f"pass --token or set {TOKEN_ENV} (or bind 127.0.0.1)",
            file=sys.stderr,
        )
        return 2
    if not 0 < args.port < 65536:
        print(f"instance-ai serve: invalid port {args.port}", file=sys.stderr)
        return 2

    import asyncio

    from ..assistant.factory import build_service
    from ..config import load_settings
    from ..server.app import create_app, loopback_hosts
    from ..server.runner import make_server
    from .logs import SERVE_FORMAT, install

    install(level=args.log_level.upper(), fmt=SERVE_FORMAT)  # every line visible text (cli.logs)
    overrides: dict[str, object] = {}
    if args.model:
        overrides["model"] = {"name": args.model}
    if args.db:
        overrides["db_path"] = args.db
    if args.workspace:
        overrides["workspace_root"] = args.workspace
    from .connection import mcp_overrides

    try:
        if mcp := mcp_overrides(args.mcp):
            overrides["mcp"] = mcp  # the server's own MCP servers: clients by URL see their calls as any other
    except ValueError as exc:
        print(f"instance-ai serve: {exc}", file=sys.stderr)
        return 2
    settings = load_settings(overrides)
    from ..server.redis_service import (
        build_redis_service,
        check_redis,
        redacted,
        resolve_redis_url,
    )

    redis_url = resolve_redis_url(args.redis, settings)
    if redis_url and (problem := check_redis(redis_url)):
        print(f"instance-ai serve: {problem}", file=sys.stderr)
        return 2
    try:
        if redis_url:
            service = build_redis_service(settings, redis_url, instance_id=args.instance_id, lease_ms=args.lease_ms,
                                          demo_delay=args.demo_delay)
        else:
            service = build_service(settings, demo_delay=args.demo_delay)
    except ValueError as exc:
        print(f"instance-ai serve: {exc}", file=sys.stderr)
        return 2
    if not redis_url and (problem := asyncio.run(_database_problem(settings.resolved_db_path))):
        print(f"instance-ai serve: {problem}", file=sys.stderr)  # one line, not the lifespan's traceback
        return 1
    # bound to loopback: answer only to loopback names and the bound address (DNS rebinding)
    allowed_hosts = loopback_hosts(args.host) if is_loopback(args.host) else None
    app = create_app(service, token=token, ping_interval=args.ping_interval, allowed_hosts=allowed_hosts)
    server = make_server(app, args.host, args.port, log_level=args.log_level)
    print(
        f"instance-ai serve: http://{args.host}:{args.port}/instance-ai  model: {service.model_label}  "
        + (f"redis: {redacted(redis_url)} (instance {service.runs.coordinator.instance_id})" if redis_url
           else f"db: {settings.resolved_db_path}")
        + ("  (token required)" if token else ""),
        file=sys.stderr,
        flush=True,
    )
    asyncio.run(server.serve())
    return 0


async def _database_problem(path: Path) -> str | None:
    """Why the SQLite database cannot open (corrupt, locked, read-only, newer: ``store.errors``), else None."""
    from ..store.errors import StoreError
    from ..store.sqlite import SqliteStore

    store = SqliteStore(path)
    try:
        await store.open()
    except StoreError as exc:
        return str(exc)
    await store.close()
    return None
