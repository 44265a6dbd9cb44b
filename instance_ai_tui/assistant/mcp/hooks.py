"""What an MCP server may ask of the app, answered by whoever runs the servers (one per service).

- ``roots()``: the folders the client offers (``roots/list``): the workspace folder when one is set
  (``--workspace``), else the current directory. ``McpServers.set_roots`` changes them and tells
  every server (``notifications/roots/list_changed``).
- ``elicit(conn, params)``: a server's ``elicitation/create`` (a form it wants the person to fill):
  the assistant asks it as a question card in the run of the call in progress
  (``assistant.mcp.elicitation``); without anyone to ask it is declined.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .elicitation import FormAsker, LiveQuestions
from .oauth import open_in_browser


async def _decline(conn: FormAsker, params: Any) -> Any:
    import mcp_types

    return mcp_types.ElicitResult(action="decline")


@dataclass
class McpHooks:
    """The answers every server of one service gets."""

    #: the roots offered (folders; the current directory when none is set)
    root_paths: list[Path] = field(default_factory=list)
    #: how a server's form is asked (default: declined, there is nobody to ask)
    elicit: Callable[[FormAsker, Any], Awaitable[Any]] = _decline
    #: where sign-ins keep their tokens (the data folder when not set)
    data_folder: Path | None = None
    #: open a sign-in URL in the person's browser (False: none could be opened; the URL is told)
    open_url: Callable[[str], bool] = open_in_browser
    #: the forms being asked now (``InstanceAI.confirm`` answers them; a call that ends cancels its own)
    questions: LiveQuestions = field(default_factory=LiveQuestions)

    def ask_forms(self) -> None:
        """Ask servers' forms as question cards in the run of their call (the assistant does)."""
        from .elicitation import ask

        async def elicit(conn: FormAsker, params: Any) -> Any:
            return await ask(conn, params, self.questions)

        self.elicit = elicit

    def data_dir(self) -> Path:
        if self.data_folder is not None:
            return self.data_folder
        from ...config_file import data_dir

        return data_dir()

    def roots(self) -> list[Path]:
        return list(self.root_paths) or [Path.cwd()]
