"""The command-line options every client command shares: the connection (``--url``, ``--token``,
``--email``, ``--dialect``, ``--db``, ``--model``, ``--workspace``, ``--mcp``), the local gateway
(``--gateway``, ``--gateway-allow``), and turning them into ``Settings`` and a ``GatewayRequest``."""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..client.factory import DIALECTS, TOKEN_ENV

if TYPE_CHECKING:
    from ..client.gateway_flag import GatewayRequest
    from ..config import Settings


def add_connection_arguments(parser: argparse.ArgumentParser, *, model: bool = True) -> None:
    """The flags every client command shares (``--url``, ``--token``, ``--email``, ``--db``, ...)."""
    group = parser.add_argument_group("connection")
    group.add_argument("--url", help="server URL (our instance-ai serve, or n8n); default: run embedded")
    group.add_argument("--token", help=f"Bearer token for --url (or set {TOKEN_ENV})")
    group.add_argument("--email", help="n8n login email (selects the n8n dialect; password from N8N_PASSWORD or a prompt)")
    group.add_argument("--mfa-code", metavar="CODE",
                       help="n8n: the two-factor code of an account with MFA, or a recovery code (or set N8N_MFA_CODE; "
                            "asked for on a terminal when n8n wants it)")
    group.add_argument("--dialect", choices=DIALECTS, help="server dialect for --url (default: detect)")
    group.add_argument("--db", type=Path, help="SQLite file for embedded mode (default: the platform data dir)")
    if model:
        group.add_argument("--model", help="model for embedded mode ('demo' = the offline demo model)")
        group.add_argument("--workspace", type=Path, help="folder the agent's file tools may use (embedded mode)")
        add_mcp_argument(group)


MCP_HELP = ("a one-off MCP server whose tools the agent may use (embedded mode), e.g. "
            "--mcp 'files=npx -y @modelcontextprotocol/server-filesystem /tmp'; COMMAND is split like a shell line; "
            "repeatable; its environment is empty but for PATH (lasting servers, env and approval: [mcp.servers.NAME] "
            "in the config file)")


def add_mcp_argument(parser: Any) -> None:
    """``--mcp NAME=COMMAND…`` (the TUI, ``run`` and ``serve``)."""
    parser.add_argument("--mcp", action="append", metavar="NAME=COMMAND…", help=MCP_HELP)


def mcp_overrides(values: list[str] | None) -> dict[str, Any]:
    """``--mcp`` values as ``{"servers": {NAME: {"command", "args"}}}`` (``ValueError`` when misused)."""
    import shlex

    servers: dict[str, Any] = {}
    for value in values or ():
        name, sep, command = value.partition("=")
        name = name.strip()
        if not sep or not name or not command.strip():
            raise ValueError(f"--mcp {value!r}: write NAME=COMMAND, e.g. --mcp 'files=npx -y some-mcp-server'")
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ValueError(f"--mcp {value!r}: {exc}") from None
        servers[name] = {"command": argv[0], "args": argv[1:]}
    return {"servers": servers} if servers else {}


def add_gateway_arguments(parser: argparse.ArgumentParser) -> None:
    """``--gateway DIR`` / ``--gateway-allow GLOB`` (TUI and ``run``; see ``client.gateway_flag``)."""
    group = parser.add_argument_group("local gateway (n8n only)")
    group.add_argument("--gateway", metavar="DIR",
                       help="let the n8n instance's agent read the files in this folder (read-only) while connected")
    group.add_argument("--gateway-allow", metavar="GLOB", action="append",
                       help="with --gateway: files readable without asking, e.g. 'docs/*' (repeatable; default: "
                            "every file in the folder); n8n asks you before reading any other file")


def settings_from_args(args: argparse.Namespace, env: dict[str, str] | None = None) -> Settings:
    """Settings file, then environment, then the flags in ``args``."""
    from ..config import load_settings

    env = dict(os.environ if env is None else env)
    remote: dict[str, Any] = {}
    if getattr(args, "url", None):
        remote["url"] = args.url
    token = getattr(args, "token", None) or env.get(TOKEN_ENV)
    if token:
        remote["token"] = token
    if getattr(args, "email", None):
        remote["email"] = args.email
    if getattr(args, "mfa_code", None):
        remote["mfa_code"] = args.mfa_code
    if getattr(args, "dialect", None):
        remote["dialect"] = args.dialect
    overrides: dict[str, Any] = {"remote": remote} if remote else {}
    if getattr(args, "model", None):
        overrides["model"] = {"name": args.model}
    if getattr(args, "db", None):
        overrides["db_path"] = args.db
    if getattr(args, "workspace", None):
        overrides["workspace_root"] = args.workspace
    try:
        mcp = mcp_overrides(getattr(args, "mcp", None))
    except ValueError as exc:
        raise SystemExit(f"instance-ai: {exc}") from None
    if mcp and getattr(args, "url", None):
        raise SystemExit("instance-ai: --mcp gives MCP servers to the embedded agent; with --url the server's "
                         "agent works, with the servers of its own config (start it with "
                         "`instance-ai serve --mcp NAME=COMMAND`, or drop --url)")
    if mcp:
        overrides["mcp"] = mcp
    return load_settings(overrides, env=env)


def gateway_from_args(args: argparse.Namespace) -> GatewayRequest | None:
    """The request in ``args`` (None without ``--gateway``); ``GatewayFlagError`` when misused."""
    from ..client.gateway_flag import GatewayFlagError, GatewayRequest
    root = getattr(args, "gateway", None)
    allow = getattr(args, "gateway_allow", None)
    if not root:
        if allow:
            raise GatewayFlagError("--gateway-allow needs --gateway DIR")
        return None
    path = Path(root).expanduser()
    if not path.exists():
        raise GatewayFlagError(f"--gateway {root}: no such folder")
    if not path.is_dir():
        raise GatewayFlagError(f"--gateway {root}: not a folder")
    patterns = tuple(p.strip() for p in allow or () if p.strip())
    return GatewayRequest(path.resolve(), patterns or None)
