"""Build the right ``Client`` from settings and command-line flags.

* no URL -> ``EmbeddedClient`` (the assistant in this process, SQLite at ``--db``);
* a URL and dialect ``instance-ai`` -> ``RemoteClient`` (our ``instance-ai serve``);
* a URL and dialect ``n8n`` -> ``client.n8n.N8nClient`` (imported lazily), built with
  ``N8nClient(url, email, password)``.

The dialect comes from ``--dialect`` / ``remote.dialect``; ``--email`` implies ``n8n``; otherwise
``open_client`` detects it: ``GET /instance-ai/health`` answering ``{"service": "instance-ai"}``
means our server, ``GET /rest/settings`` answering ``{"data": {...}}`` means n8n.
Heavy modules (the assistant, httpx) are imported only when needed.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily: ``--help`` must not pay for the models
    from ..config import Settings
    from .base import Client

DIALECTS = ("instance-ai", "n8n")
TOKEN_ENV = "INSTANCE_AI_TOKEN"


def add_connection_arguments(parser: argparse.ArgumentParser, *, model: bool = True) -> None:
    """The flags every client command shares (``--url``, ``--token``, ``--email``, ``--db``, ...)."""
    group = parser.add_argument_group("connection")
    group.add_argument("--url", help="server URL (our instance-ai serve, or n8n); default: run embedded")
    group.add_argument("--token", help=f"Bearer token for --url (or set {TOKEN_ENV})")
    group.add_argument("--email", help="n8n login email (selects the n8n dialect; password from N8N_PASSWORD or a prompt)")
    group.add_argument("--dialect", choices=DIALECTS, help="server dialect for --url (default: detect)")
    group.add_argument("--db", type=Path, help="SQLite file for embedded mode (default: the platform data dir)")
    if model:
        group.add_argument("--model", help="model for embedded mode ('demo' = the offline demo model)")
        group.add_argument("--workspace", type=Path, help="folder the agent's file tools may use (embedded mode)")


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
    if getattr(args, "dialect", None):
        remote["dialect"] = args.dialect
    overrides: dict[str, Any] = {"remote": remote} if remote else {}
    if getattr(args, "model", None):
        overrides["model"] = {"name": args.model}
    if getattr(args, "db", None):
        overrides["db_path"] = args.db
    if getattr(args, "workspace", None):
        overrides["workspace_root"] = args.workspace
    return load_settings(overrides, env=env)


def build_client(settings: Settings, dialect: str | None = None, *, interactive: bool | None = None) -> Client:
    """The client the settings ask for, not opened. ``dialect`` overrides the settings' one.

    ``interactive``: whether the n8n dialect may prompt on the terminal for a missing password
    (default: when stdin is a terminal). The TUI passes ``False``: it asks in a login dialog."""
    remote = settings.remote
    if not remote.url:
        from .embedded import EmbeddedClient

        return EmbeddedClient(settings)
    dialect = dialect or remote.dialect or ("n8n" if remote.email else "instance-ai")
    if dialect == "n8n":
        from .n8n import N8nClient

        password = remote.password.get_secret_value() if remote.password else None
        return N8nClient(remote.url, remote.email, password, interactive=interactive)
    if dialect != "instance-ai":
        from .base import ClientError

        raise ClientError(f"unknown dialect {dialect!r}: use one of {', '.join(DIALECTS)}")
    from .remote import RemoteClient

    token = remote.token.get_secret_value() if remote.token else None
    return RemoteClient(remote.url, token)


async def detect_dialect(url: str, timeout: float = 10.0) -> str:
    """``"instance-ai"`` or ``"n8n"`` for the server at ``url``; ``ClientError`` if neither."""
    import httpx

    from .base import ClientError
    from .remote import normalise_base_url

    base = normalise_base_url(url)
    # plain http (no redirects followed): no certificate store to load, ~40 ms less before the
    # app's first frame
    verify = base.startswith("https:")
    async with httpx.AsyncClient(timeout=timeout, verify=verify) as http:
        try:
            health = await http.get(f"{base}/instance-ai/health")
            if health.status_code == 200 and _json_field(health, "service") == "instance-ai":
                return "instance-ai"
            settings = await http.get(f"{base}/rest/settings")
            if settings.status_code == 200 and isinstance(_json_field(settings, "data"), dict):
                return "n8n"
        except httpx.HTTPError as exc:
            raise ClientError(f"cannot reach {base}: {exc or type(exc).__name__}") from None
    raise ClientError(
        f"{base} is neither an Instance AI server (/instance-ai/health) nor an n8n instance (/rest/settings)"
    )


def _json_field(response: Any, key: str) -> Any:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get(key) if isinstance(body, dict) else None


async def open_client(settings: Settings) -> Client:
    """Build the client (detecting the dialect of a URL when not given) and open it."""
    remote = settings.remote
    dialect = remote.dialect or ("n8n" if remote.email else None)
    if remote.url and dialect is None:
        dialect = await detect_dialect(remote.url)
    client = build_client(settings, dialect)
    try:
        await client.open()
    except BaseException:
        await client.close()
        raise
    return client
