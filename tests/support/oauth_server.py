"""A small OAuth 2.1 authorization server and the MCP server it protects, written with the ``mcp``
SDK's server auth helpers (``OAuthAuthorizationServerProvider``, ``AuthSettings``: the SDK serves
discovery, dynamic client registration, ``/authorize``, ``/token`` with PKCE, and checks the
bearer token on ``/mcp``), for the OAuth tests.

The provider keeps everything in memory and approves every authorization at once (the person's
"yes" in a browser): ``/authorize`` redirects to the client's loopback ``redirect_uri`` with a
code. It records what happened (``events``: registrations, authorizations, code and refresh
grants) so a test can tell a refresh from a new sign-in. ``told_expiry``: the lifetime the client
is told for each access token (0: already expired, so the client refreshes it before its next
request, or at its next start; the server itself accepts every token for an hour).
"""

from __future__ import annotations

import secrets
import time
from typing import Any

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    RefreshToken,
    construct_redirect_uri,
)
from mcp.server.auth.settings import AuthSettings, ClientRegistrationOptions
from mcp.server.mcpserver import MCPServer
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from mcp_types import ToolAnnotations


class MemoryProvider:
    """An ``OAuthAuthorizationServerProvider`` in memory (see the module docstring)."""

    def __init__(self, told_expiry: int = 3600) -> None:
        self.clients: dict[str, OAuthClientInformationFull] = {}
        self.codes: dict[str, AuthorizationCode] = {}
        self.access: dict[str, AccessToken] = {}
        self.refresh: dict[str, RefreshToken] = {}
        self.events: list[str] = []
        self.told_expiry = told_expiry

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return self.clients.get(client_id)

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        assert client_info.client_id is not None
        self.clients[client_info.client_id] = client_info
        self.events.append("register")

    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        code = secrets.token_urlsafe(24)
        assert client.client_id is not None
        self.codes[code] = AuthorizationCode(
            code=code, scopes=params.scopes or [], expires_at=time.time() + 300, client_id=client.client_id,
            code_challenge=params.code_challenge, redirect_uri=params.redirect_uri,
            redirect_uri_provided_explicitly=params.redirect_uri_provided_explicitly, resource=params.resource,
            subject="ada")
        self.events.append("authorize")
        return construct_redirect_uri(str(params.redirect_uri), code=code, state=params.state)

    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str) -> Any:
        return self.codes.get(authorization_code)

    def _issue(self, client_id: str, scopes: list[str], resource: str | None, expiry: int) -> OAuthToken:
        access, refresh = secrets.token_urlsafe(24), secrets.token_urlsafe(24)
        self.access[access] = AccessToken(token=access, client_id=client_id, scopes=scopes,
                                          expires_at=int(time.time()) + 3600, resource=resource, subject="ada")
        self.refresh[refresh] = RefreshToken(token=refresh, client_id=client_id, scopes=scopes, resource=resource,
                                             subject="ada")
        return OAuthToken(access_token=access, expires_in=expiry, refresh_token=refresh,
                          scope=" ".join(scopes) or None)

    async def exchange_authorization_code(self, client: OAuthClientInformationFull, authorization_code: Any) -> OAuthToken:
        self.codes.pop(authorization_code.code, None)
        self.events.append("code")
        assert client.client_id is not None
        return self._issue(client.client_id, authorization_code.scopes, authorization_code.resource, self.told_expiry)

    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str) -> Any:
        return self.refresh.get(refresh_token)

    async def exchange_refresh_token(self, client: OAuthClientInformationFull, refresh_token: Any,
                                     scopes: list[str], resource: str | None = None) -> OAuthToken:
        self.refresh.pop(refresh_token.token, None)
        self.events.append("refresh")
        assert client.client_id is not None
        return self._issue(client.client_id, scopes or refresh_token.scopes, resource or refresh_token.resource,
                           self.told_expiry)

    async def load_access_token(self, token: str) -> AccessToken | None:
        found = self.access.get(token)
        if found is None or (found.expires_at is not None and found.expires_at <= time.time()):
            return None
        return found

    async def revoke_token(self, token: Any) -> None:
        self.access.pop(getattr(token, "token", ""), None)
        self.refresh.pop(getattr(token, "token", ""), None)


def oauth_app(base_url: str, provider: MemoryProvider) -> Any:
    """The MCP server at ``{base_url}/mcp`` and its authorization server at ``base_url`` (one app)."""
    server = MCPServer(
        "signed-in", instructions="A server that needs sign-in.", auth_server_provider=provider,
        auth=AuthSettings(issuer_url=base_url, resource_server_url=f"{base_url}/mcp",
                          client_registration_options=ClientRegistrationOptions(enabled=True),
                          validate_token_resource=False))

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    def whoami() -> str:
        """Who the token belongs to."""
        return "signed in as ada"

    return server.streamable_http_app(streamable_http_path="/mcp")
