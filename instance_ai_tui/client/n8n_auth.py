"""Signing in to a real n8n: the ``browser-id`` header, ``POST /rest/login`` and the auth cookie.

n8n binds its ``n8n-auth`` JWT cookie to a hash of the ``browser-id`` header sent at login;
every later request must carry the same header (reference §1.1). The cookie is marked
``Secure``, so httpx's cookie jar will not send it over plain ``http://``: we keep it
ourselves and send it as an explicit ``Cookie`` header.

The browser id is not a secret (it only ties a cookie to this client), so it is kept in a
small file in the config dir. The password and the cookie are never written anywhere.
"""

from __future__ import annotations

import getpass
import os
import sys
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from http.cookies import CookieError, SimpleCookie
from pathlib import Path

import httpx
from pydantic import SecretStr

from .base import AuthError, ClientError, ServerUnreachable

AUTH_COOKIE = "n8n-auth"
#: n8n's ``AuthError('MFA Error', 998)``: the account has two-factor auth and no code was sent
MFA_REQUIRED_CODE = 998
BROWSER_ID_FILE = "n8n-browser-id"
ENV_EMAIL = "N8N_EMAIL"
ENV_PASSWORD = "N8N_PASSWORD"
#: the account's two-factor code (TOTP) or a recovery code, for an owner with MFA on
ENV_MFA_CODE = "N8N_MFA_CODE"


def browser_id_path(config_dir: Path | None = None) -> Path:
    if config_dir is None:
        from ..config import config_dir as default_config_dir

        config_dir = default_config_dir()
    return config_dir / BROWSER_ID_FILE


def load_browser_id(config_dir: Path | None = None) -> str:
    """The stable browser id of this installation; generated and saved on first use.

    A file that cannot be written (read-only home) still gives a working id for this process.
    """
    path = browser_id_path(config_dir)
    try:
        text = path.read_text(encoding="utf-8").strip()
        uuid.UUID(text)
        return text
    except (OSError, ValueError):
        pass
    new_id = str(uuid.uuid4())
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(new_id + "\n", encoding="utf-8")
    except OSError:
        pass
    return new_id


def auth_cookie_from(response: httpx.Response) -> str | None:
    """The ``n8n-auth`` value set by ``response``, parsed from the raw ``Set-Cookie`` headers.

    Returns ``""`` when the server clears the cookie (logout), ``None`` when it does not set it.
    """
    for header in response.headers.get_list("set-cookie"):
        jar: SimpleCookie = SimpleCookie()
        try:
            jar.load(header)
        except CookieError:
            continue
        morsel = jar.get(AUTH_COOKIE)
        if morsel is not None:
            return morsel.value
    return None


class MfaRequired(AuthError):
    """n8n wants the account's two-factor code (or a recovery code) with the password."""


class PasswordMissing(AuthError):
    """No password was given (no flag, no ``N8N_PASSWORD``, no terminal to ask on): nothing was sent
    to n8n. ``email`` is the account's; the login dialog asks for the password itself."""

    def __init__(self, message: str, email: str) -> None:
        super().__init__(message)
        self.email = email


@dataclass
class Credentials:
    email: str
    password: SecretStr
    #: the two-factor code (TOTP) or a recovery code, when n8n asks for one
    mfa_code: SecretStr | None = None

    def __repr__(self) -> str:  # never show the password, even in a traceback
        return f"Credentials(email={self.email!r}, password=***)"


def resolve_credentials(
    email: str | None,
    password: str | SecretStr | None,
    *,
    mfa_code: str | SecretStr | None = None,
    env: Mapping[str, str] | None = None,
    interactive: bool | None = None,
    prompt: Callable[[str], str] = getpass.getpass,
    ask_email: Callable[[str], str] = input,
) -> Credentials | None:
    """Email and password from the arguments, then ``N8N_EMAIL``/``N8N_PASSWORD``, then a prompt;
    the two-factor code from ``mfa_code``, then ``N8N_MFA_CODE`` (asked for only when n8n wants it:
    ``ask_mfa_code``).

    ``interactive=None`` prompts only when stdin is a terminal. Returns ``None`` when nothing
    is known and prompting is not possible (the caller may still have a cookie).
    Blocking (it may prompt): call it in a thread from async code.
    """
    env = os.environ if env is None else env
    email = email or env.get(ENV_EMAIL) or None
    secret = password.get_secret_value() if isinstance(password, SecretStr) else password
    secret = secret or env.get(ENV_PASSWORD) or None
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    if email is None and interactive:
        email = ask_email("n8n email: ").strip() or None
    if email is None:
        return None
    if secret is None and interactive:
        secret = prompt(f"n8n password for {email}: ") or None
    if secret is None:
        return None
    code = mfa_code.get_secret_value() if isinstance(mfa_code, SecretStr) else mfa_code
    code = (code or env.get(ENV_MFA_CODE) or "").strip() or None
    return Credentials(email=email, password=SecretStr(secret), mfa_code=SecretStr(code) if code else None)


def ask_mfa_code(email: str, *, interactive: bool | None = None,
                 prompt: Callable[[str], str] = getpass.getpass) -> str | None:
    """The two-factor code typed on the terminal (``None`` when stdin is not one, or nothing typed).
    Blocking: call it in a thread from async code."""
    if interactive is None:
        interactive = sys.stdin is not None and sys.stdin.isatty()
    if not interactive:
        return None
    return prompt(f"n8n two-factor code for {email} (or a recovery code): ").strip() or None


@dataclass
class N8nSession:
    """What authenticates us to n8n: the browser id and, once logged in, the auth cookie."""

    browser_id: str
    cookie: SecretStr | None = None
    user: dict[str, object] = field(default_factory=dict)

    def headers(self) -> dict[str, str]:
        out = {"browser-id": self.browser_id}
        if self.cookie is not None and self.cookie.get_secret_value():
            out["Cookie"] = f"{AUTH_COOKIE}={self.cookie.get_secret_value()}"
        return out

    @property
    def logged_in(self) -> bool:
        return self.cookie is not None and bool(self.cookie.get_secret_value())

    def absorb(self, response: httpx.Response) -> None:
        """Pick up a refreshed (or cleared) auth cookie from any response."""
        value = auth_cookie_from(response)
        if value is not None:
            self.cookie = SecretStr(value) if value else None

    def __repr__(self) -> str:
        return f"N8nSession(browser_id={self.browser_id!r}, logged_in={self.logged_in})"


async def login(http: httpx.AsyncClient, base_url: str, session: N8nSession, credentials: Credentials) -> None:
    """``POST /rest/login``; stores the auth cookie in ``session``. Raises ``AuthError`` when refused."""
    url = base_url.rstrip("/") + "/rest/login"
    body = {"emailOrLdapLoginId": credentials.email, "password": credentials.password.get_secret_value()}
    if credentials.mfa_code is not None and credentials.mfa_code.get_secret_value().strip():
        code = credentials.mfa_code.get_secret_value().strip()
        body["mfaCode" if code.isdigit() else "mfaRecoveryCode"] = code
    try:
        response = await http.post(url, json=body, headers={"browser-id": session.browser_id})
    except httpx.HTTPError as exc:
        raise ServerUnreachable(f"cannot reach n8n at {base_url}: {type(exc).__name__} {exc}".rstrip()) from None
    if "json" not in response.headers.get("content-type", ""):
        # n8n answers JSON; its editor's HTML page (a 200, while it boots), an HTML 404 or a bare 5xx is a
        # server that is still starting (or not n8n)
        raise ServerUnreachable(f"{base_url} did not answer n8n's login route (HTTP {response.status_code}, not "
                                "JSON): n8n is still starting, or this URL is not n8n")
    if response.status_code in (401, 403):
        detail = _message(response)
        if _code(response) == MFA_REQUIRED_CODE:
            raise MfaRequired(f"n8n asks for the two-factor code of {credentials.email}", response.status_code)
        if "mfa" in detail.lower():
            raise MfaRequired(f"n8n refused the two-factor code for {credentials.email}: {detail}",
                              response.status_code)
        raise AuthError(f"n8n refused the login for {credentials.email}: {detail or 'wrong email or password'}",
                        response.status_code)
    if response.status_code == 429:
        raise ClientError("n8n refused the login: too many attempts, wait a minute", 429)
    if response.status_code >= 400:
        raise ClientError(f"n8n login failed ({response.status_code}): {_message(response)}", response.status_code)
    cookie = auth_cookie_from(response)
    if not cookie:
        raise AuthError(f"n8n accepted the login but set no {AUTH_COOKIE} cookie; is {base_url} really n8n?")
    session.cookie = SecretStr(cookie)
    try:
        data = response.json().get("data")
    except (ValueError, AttributeError):
        data = None
    session.user = data if isinstance(data, dict) else {}


def _code(response: httpx.Response) -> object:
    try:
        body = response.json()
    except ValueError:
        return None
    return body.get("code") if isinstance(body, dict) else None


def _message(response: httpx.Response) -> str:
    try:
        body = response.json()
    except ValueError:
        return response.text[:200]
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return body["message"]
    return response.text[:200]
