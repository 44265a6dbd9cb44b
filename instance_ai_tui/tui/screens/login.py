"""The n8n login dialog (issue 13): a failed login opens it instead of an app that swallows messages.

Email, password and the two-factor code (a field of its own from the start: empty for an
account without two-factor auth; when n8n asks for it, its ``MFA Error`` 998 answer, the dialog
says so and goes to that field). The dialog calls ``Client.login`` itself and closes only when n8n accepted; a refusal
is shown in the dialog and nothing typed is lost. Escape closes it without logging in: the app
then says, in its banner, that it cannot send until it is logged in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import BindingType
from textual.containers import Horizontal, Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Footer, Input, Label, Static

from ...client.base import AuthError, Client, ClientError
from .. import keymap

if TYPE_CHECKING:
    from ..open_thread import Outbox
    from ..ports import Ui


NOT_LOGGED_IN = "not logged in to n8n — quit (Ctrl+Q) and start again to log in; nothing can be sent meanwhile."


class LoginScreen(ModalScreen[bool]):
    """Log in to n8n. Dismisses with ``True`` once the client is open, ``False`` on Escape."""

    DEFAULT_CSS = """
    LoginScreen { align: center middle; }
    LoginScreen > Vertical { width: 64; max-width: 100%; height: auto; border: round $accent; padding: 1 2;
                             background: $surface; }
    LoginScreen .title { text-style: bold; margin-bottom: 1; }
    LoginScreen Input { margin-bottom: 1; }
    LoginScreen #login-error { color: $text-error; height: auto; margin-bottom: 1; }
    LoginScreen Horizontal { height: auto; }
    LoginScreen Button { margin-right: 2; }
    """

    KEY_SCOPES = ("login",)
    BINDINGS: ClassVar[list[BindingType]] = [*keymap.bindings("login")]

    def __init__(self, client: Client, reason: str, email: str = "") -> None:
        super().__init__()
        self.client = client
        self.reason = reason
        self.email = email
        self.attempts = 0
        #: n8n said this account needs the code (its 998 answer): Enter waits for one
        self.mfa_required = False

    def compose(self) -> ComposeResult:
        base_url = getattr(self.client, "base_url", "n8n")
        with Vertical():
            yield Label(f"Log in to n8n at {base_url}", classes="title")
            yield Static(self.reason, id="login-error", markup=False)
            yield Input(value=self.email, placeholder="email", id="login-email")
            yield Input(placeholder="password", password=True, id="login-password")
            yield Input(placeholder="two-factor code, if your account has one (or a recovery code)", id="login-mfa")
            with Horizontal():
                yield Button("Log in", variant="primary", id="login-submit")
                yield Button("Cancel", id="login-cancel")
        yield Footer()  # the dialog's own keys (the main screen's footer said "⏎ Send the message")

    def on_mount(self) -> None:
        target = "#login-password" if self.email else "#login-email"
        self.query_one(target, Input).focus()

    @on(Input.Submitted)
    def _enter(self, event: Input.Submitted) -> None:
        event.stop()
        order = ["login-email", "login-password"] + (["login-mfa"] if self.mfa_required else [])
        current = event.input.id or ""
        values = {name: self.query_one(f"#{name}", Input).value for name in order}
        missing = next((name for name in order if not values[name].strip()), None)
        if missing is not None and missing != current:
            self.query_one(f"#{missing}", Input).focus()
            return
        self.submit()

    @on(Button.Pressed, "#login-submit")
    def _submit_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.submit()

    @on(Button.Pressed, "#login-cancel")
    def _cancel_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.action_cancel()

    def action_cancel(self) -> None:
        self.dismiss(False)

    def _say(self, message: str) -> None:
        self.query_one("#login-error", Static).update(message)

    @work(exclusive=True, exit_on_error=False)
    async def submit(self) -> None:
        from ...client.n8n_auth import MfaRequired

        email = self.query_one("#login-email", Input).value.strip()
        password = self.query_one("#login-password", Input).value
        mfa = self.query_one("#login-mfa", Input)
        if not email or not password:
            self._say("Enter the email and the password of your n8n account.")
            return
        self._say("Logging in…")
        self.attempts += 1
        try:
            await self.client.login(email, password, mfa.value.strip() or None)
        except MfaRequired as exc:
            self._say(f"{exc}. Enter the code from your authenticator app.")
            self.mfa_required = True
            mfa.value = ""
            mfa.focus()
            return
        except AuthError as exc:
            self._say(str(exc))
            self.query_one("#login-password", Input).focus()
            return
        except ClientError as exc:
            self._say(f"{exc}")
            return
        self.dismiss(True)


async def offer_login(ui: Ui, client: Client, outbox: Outbox, error: ClientError) -> bool:
    """After ``open()`` failed: a login dialog when the client can log in and the failure was
    about credentials. Returns whether the client is open now; if not, the outbox refuses to
    send (and the banner says why). Call from a worker."""
    if not isinstance(error, AuthError) or not client.supports_login:
        return False
    from ...client.n8n_auth import PasswordMissing

    email = getattr(client, "email", "") or ""
    # no password given: the dialog is the way to give it (the CLI's words name the flag and the env)
    reason = f"Enter the password of {error.email}." if isinstance(error, PasswordMissing) else str(error)
    logged_in = await ui.push_screen_wait(LoginScreen(client, reason, email))
    if not logged_in:
        outbox.block(NOT_LOGGED_IN)
    return bool(logged_in)
