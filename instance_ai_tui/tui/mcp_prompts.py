"""The MCP servers in the prompt: their prompts as slash commands, ``@server:uri`` completion.

- ``/mcp__<server>__<prompt>`` runs a server's prompt: its arguments come inline
  (``name=value``, quoted like a shell line) or, when a required one is missing, from a small form
  (``screens.mcp_prompt``); the prompt's text is then sent as the person's message.
- **Tab** in the prompt completes the word at the cursor when it is a ``@server:uri`` mention (the
  server's resources, from ``resources/list``) or an ``/mcp__…`` command; several matches: the
  longest common start first, then each in turn, the list said in a notification. Anything else:
  Tab moves the focus, as before.
- ``/help`` and the palette list the prompts of the servers ready now.

What a server says (names, descriptions, URIs) is outside text: shown through ``visible``.
"""

from __future__ import annotations

import asyncio
import shlex
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING, Any

from ..client.base import ClientError
from ..protocol.safe_text import visible
from .commands import Command

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.mcp import McpPromptInfo, McpStatus
    from .ports import Ui

PREFIX = "mcp__"
#: seconds a read of the servers' lists is reused
FRESH_SECONDS = 2.0
#: matches listed in the notification of a Tab with several
SHOWN_MATCHES = 8


@dataclass(frozen=True, slots=True)
class PromptCommand:
    server: str
    prompt: McpPromptInfo

    @property
    def command(self) -> str:
        return f"{PREFIX}{self.server}__{self.prompt.name}"

    @property
    def usage(self) -> str:
        args = " ".join(f"{a.name}=…" if a.required else f"[{a.name}=…]" for a in self.prompt.arguments)
        return f"/{self.command}" + (f" {args}" if args else "")


class McpCatalog:
    """What the client's MCP servers offer the prompt: read from ``Client.mcp_status`` when needed
    (reused for ``FRESH_SECONDS``); empty where the client has no MCP servers (n8n)."""

    def __init__(self, client: Callable[[], Client]) -> None:
        self._client = client
        self.status: McpStatus | None = None
        self._read_at = 0.0

    async def refresh(self, *, force: bool = False) -> McpStatus | None:
        if not force and self.status is not None and time.monotonic() - self._read_at < FRESH_SECONDS:
            return self.status
        try:
            self.status = await asyncio.wait_for(self._client().mcp_status(), 5)
        except (ClientError, TimeoutError):
            self.status = None
        self._read_at = time.monotonic()
        return self.status

    def prompts(self) -> list[PromptCommand]:
        if self.status is None:
            return []
        return [PromptCommand(s.name, p) for s in self.status.servers if s.state == "ready" for p in s.prompts]

    def find(self, command: str) -> PromptCommand | None:
        return next((p for p in self.prompts() if p.command == command), None)

    def resources(self, server: str) -> list[str]:
        if self.status is None:
            return []
        return next((list(s.resources) for s in self.status.servers if s.name == server), [])

    def servers(self) -> list[str]:
        return [s.name for s in self.status.servers if s.resources] if self.status is not None else []


def is_prompt_command(name: str) -> bool:
    return name.startswith(PREFIX)


def parse_arguments(text: str) -> dict[str, str]:
    """``city=Lisbon "note=two words"`` -> ``{"city": "Lisbon", "note": "two words"}`` (ValueError when misused)."""
    values: dict[str, str] = {}
    for part in shlex.split(text):
        name, sep, value = part.partition("=")
        if not sep or not name:
            raise ValueError(f"{part!r}: write name=value")
        values[name] = value
    return values


async def run_prompt(catalog: McpCatalog, client: Client, name: str, argument_text: str, *,
                     ask: Callable[[PromptCommand, dict[str, str]], Awaitable[dict[str, str] | None]],
                     send: Callable[[str], Awaitable[Any]], notify: Callable[..., Any]) -> None:
    """``/mcp__server__prompt args``: the arguments (inline, else asked), the prompt's text sent."""
    await catalog.refresh()
    command = catalog.find(name)
    if command is None:
        known = ", ".join("/" + p.command for p in catalog.prompts()[:10]) or "none (is the server ready? /mcp)"
        notify(visible(f"No MCP prompt /{name}. Prompts: {known}"), severity="warning", timeout=8)
        return
    try:
        values = parse_arguments(argument_text)
    except ValueError as exc:
        notify(visible(f"/{name}: {exc} (usage: {command.usage})"), severity="warning", timeout=8)
        return
    missing = [a for a in command.prompt.arguments if a.required and not values.get(a.name, "").strip()]
    if missing or (command.prompt.arguments and not argument_text.strip()):
        answered = await ask(command, values)
        if answered is None:
            return
        values = answered
    try:
        text = await client.mcp_prompt(command.server, command.prompt.name, values)
    except ClientError as exc:
        notify(visible(f"/{name}: {exc}"), severity="error", timeout=8)
        return
    if not text.text.strip():
        notify(visible(f"/{name}: the prompt is empty; nothing sent"), severity="warning")
        return
    await send(text.text)


def help_markdown(catalog: McpCatalog) -> str:
    """The ``/help`` section of the MCP prompts ready now (empty without any)."""
    prompts = catalog.prompts()
    if not prompts:
        return ""
    rows = "\n".join(f"| `{visible(p.usage)}` | {visible(p.prompt.description.splitlines()[0] if p.prompt.description else '')} |"
                     for p in prompts[:100])
    return ("\n## Prompts of your MCP servers\n\nEach sends the server's prompt as your message; a missing "
            f"argument is asked in a form.\n\n| Command | What it does |\n|---|---|\n{rows}\n")


@dataclass
class Completion:
    """What Tab does: replace ``start``..cursor of the line with ``text``; ``matches`` to say."""

    start: int
    text: str
    matches: list[str]


class Completer:
    """Completes ``@server:uri`` and ``/mcp__…`` at the cursor (see the module docstring)."""

    def __init__(self, catalog: McpCatalog) -> None:
        self.catalog = catalog
        #: the last completion offered (a Tab again moves to the next match)
        self._cycle: tuple[str, list[str], int] | None = None

    def _candidates(self, word: str) -> list[str]:
        if word.startswith("@"):
            server, colon, partial = word[1:].partition(":")
            if not colon:
                return [f"@{name}:" for name in self.catalog.servers() if name.startswith(server)]
            return [f"@{server}:{uri}" for uri in self.catalog.resources(server) if uri.startswith(partial)]
        if word.startswith("/"):
            return [f"/{p.command}" for p in self.catalog.prompts() if f"/{p.command}".startswith(word)]
        return []

    async def complete(self, line: str, column: int) -> Completion | None:
        before = line[:column]
        start = max(before.rfind(" "), before.rfind("\t")) + 1
        word = before[start:]
        if not (word.startswith("@") or (word.startswith("/") and start == 0 and len(word) > 1)):
            self._cycle = None
            return None
        if self._cycle is not None and word in self._cycle[1]:
            _, matches, index = self._cycle
            index = (index + 1) % len(matches)
            self._cycle = (self._cycle[0], matches, index)
            return Completion(start, matches[index], matches)
        await self.catalog.refresh()
        matches = sorted(self._candidates(word))
        if not matches:
            self._cycle = None
            return None
        common = _common_start(matches)
        if len(matches) == 1 or len(common) > len(word):
            self._cycle = (word, matches, -1) if len(matches) > 1 else None
            return Completion(start, matches[0] if len(matches) == 1 else common, matches)
        self._cycle = (word, matches, 0)
        return Completion(start, matches[0], matches)


def _common_start(words: list[str]) -> str:
    first, last = min(words), max(words)
    size = 0
    while size < len(first) and size < len(last) and first[size] == last[size]:
        size += 1
    return first[:size]


def said(matches: list[str]) -> str:
    """The matches of a Tab, for a notification."""
    shown = ", ".join(visible(m) for m in matches[:SHOWN_MATCHES])
    more = f" … and {len(matches) - SHOWN_MATCHES} more" if len(matches) > SHOWN_MATCHES else ""
    return f"{len(matches)} matches: {shown}{more} (Tab: the next)"


class McpPrompts:
    """The MCP servers in the prompt (the room): ``catalog`` of what they offer, the prompt's
    ``completer``, and ``/mcp__…`` commands run through ``run_prompt`` with the form and the outbox.
    ``client()``: the open thread's client; ``send``: the outbox's."""

    def __init__(self, ui: Ui, client: Callable[[], Client], send: Callable[[str], Awaitable[Any]]) -> None:
        self.ui = ui
        self.catalog = McpCatalog(client)
        self.completer = Completer(self.catalog)
        self._client = client
        self._send = send

    def run(self, name: str, argument_text: str) -> None:
        """``/mcp__server__prompt args`` typed: worked in the background."""
        self.ui.run_worker(self._run(name, argument_text), group="mcp-prompt", exit_on_error=False)

    async def _run(self, name: str, argument_text: str) -> None:
        from .screens.mcp_prompt import McpPromptForm

        async def ask(command: PromptCommand, values: dict[str, str]) -> dict[str, str] | None:
            form = McpPromptForm(f"/{command.command}", command.prompt, values)
            result: dict[str, str] | None = await self.ui.push_screen_wait(form)
            return result

        async def send(text: str) -> None:
            await self._send(text)

        await run_prompt(self.catalog, self._client(), name, argument_text, ask=ask, send=send, notify=self.ui.notify)

    def help(self) -> str:
        return help_markdown(self.catalog)

    def palette(self, submit: Callable[[str], object]) -> list[tuple[Command, Callable[[], object]]]:
        """The prompts of the servers ready now, as the palette's entries: selecting one types it."""
        entries: list[tuple[Command, Callable[[], object]]] = []
        for prompt in self.catalog.prompts():
            about = visible(prompt.prompt.description[:120] or f"a prompt of the MCP server {prompt.server}")
            entry = Command(prompt.command, about, visible(f"MCP {prompt.server}: {prompt.prompt.name}"), about,
                            lambda actions, arg: None)
            entries.append((entry, partial(submit, f"/{prompt.command}")))
        return entries
