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

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported lazily: ``--help`` must not pay for the models
    from ..config import Settings
    from .base import Client

DIALECTS = ("instance-ai", "n8n")
TOKEN_ENV = "INSTANCE_AI_TOKEN"

#: optional modules the HTTP stack imports when they are installed, which a command never uses:
#: httpcore's trio support (trio is in the environment for other tools; some 70-90 ms), httpx's
#: own command line (rich, click and pygments; some 40 ms) and the ``openai`` SDK's aiohttp
#: transport (its ``DefaultAioHttpClient``, imported by ``import openai`` whenever aiohttp is
#: installed, as it is here for ``instance-ai web``; some 100 ms): the SDK's requests go through
#: its default httpx client, and ``DefaultAioHttpClient`` then says the aiohttp extra is missing
UNUSED_OPTIONAL_IMPORTS = ("trio", "httpx._main", "openai._vendor.httpx_aiohttp")


def skip_unused_optional_imports() -> None:
    """Make the optional imports of ``UNUSED_OPTIONAL_IMPORTS`` fail fast (as if not installed),
    for the process of a command (the TUI, ``run``): its start-up is what a person waits for.
    A module already imported is left alone."""
    for name in UNUSED_OPTIONAL_IMPORTS:
        if name not in sys.modules:
            # None is the import system's "not available": ``import trio`` raises ImportError
            sys.modules[name] = None  # type: ignore[assignment]


def build_client(settings: Settings, dialect: str | None = None, *, interactive: bool | None = None,
                 wait_while_down: bool = False) -> Client:
    """The client the settings ask for, not opened. ``dialect`` overrides the settings' one.

    ``interactive``: whether the n8n dialect may prompt on the terminal for a missing password
    (default: when stdin is a terminal). The TUI passes ``False``: it asks in a login dialog.
    ``wait_while_down`` (the TUI): an n8n that does not answer yet is waited for when the client
    opens (``N8nClient``), not an error."""
    remote = settings.remote
    if not remote.url:
        from .embedded import EmbeddedClient

        return EmbeddedClient(settings)
    dialect = dialect or remote.dialect or ("n8n" if remote.email else "instance-ai")
    if dialect == "n8n":
        from .n8n import N8nClient

        password = remote.password.get_secret_value() if remote.password else None
        return N8nClient(remote.url, remote.email, password, mfa_code=remote.mfa_code, interactive=interactive,
                         wait_while_down=wait_while_down)
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
