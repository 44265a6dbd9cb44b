"""``instance-ai run "message"``: send one message headless and stream the answer.

The answer text goes to stdout as it streams; tool calls, sub-agents, tasks and errors go
to stderr. With ``--json`` stdout carries every protocol event of the run as one JSON object
per line and nothing else, each with the thread's id (``threadId``) added. Confirmations are answered by ``--approve all`` (approve; for
questions pick the first option), ``--approve none`` (deny), or by asking on the terminal
(the default when stdin is a terminal; otherwise deny). Exit status: 0 when the run
completes, 1 when it ends otherwise (error, cancelled, interrupted) or on an error, 130
after Ctrl-C (which cancels the run first), 2 for misused flags. A ``run-finish`` without a
status is not a success (1).

Against a broken or hostile server ``run`` never waits silently for ever: lost connections
are reported on stderr, and it gives up (exit 1, after asking the server to cancel the run)
when ``--max-retries`` (default 10) reconnections in a row bring no event of the run, or when
no event of the run arrives for ``--idle-timeout`` seconds (default 300; keep-alive pings and
replayed or backward ids are not progress; time spent waiting for your answer does not
count). ``--timeout`` (default: none) bounds the whole run. Everything printed for a person
has terminal control sequences removed (a server cannot clear the screen, set the title or
write the clipboard through ``run``); ``--json`` escapes them.

With ``--gateway DIR`` (an n8n connection only) the local gateway shares ``DIR`` read-only
with n8n's agent for the length of the run (``client.gateway_flag``); what it serves is noted
on stderr.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, TextIO, cast

from ..protocol.safe_text import json_safe, visible
from .connection import add_connection_arguments, add_gateway_arguments
from .mcp_notes import DEFAULT_WAIT as MCP_WAIT
from .mcp_notes import add_argument as add_mcp_wait_argument
from .mcp_notes import for_run as mcp_notes_for
from .run_answers import _approved, auto_answer, describe_answer, server_form
from .run_lean import Handoff, LeanRun, Sent

#: seconds without an event of the run before ``run`` gives up
DEFAULT_IDLE_TIMEOUT = 300.0
#: reconnections in a row without an event of the run before ``run`` gives up
DEFAULT_MAX_RETRIES = 10
#: seconds of a quiet run between two "waiting for the model N s" notes
WAIT_NOTE_EVERY = 20.0

def terminal_safe(text: str) -> str:
    """``text`` with everything a terminal would interpret (escape and control sequences, bidi
    overrides) made visible instead: ``protocol.safe_text.visible``."""
    return visible(text)


def json_line(data: Any) -> str:
    """One JSON line; control characters JSON itself leaves raw (DEL, C1) are escaped too."""
    return json_safe(json.dumps(data, ensure_ascii=False, separators=(",", ":")))

if TYPE_CHECKING:
    from ..client.base import Client
    from ..protocol.api import ConfirmBody
    from ..protocol.events import ConfirmationPayload, Event


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.epilog = ("exit codes: 0 the run completed; 1 it did not: an error, a cancellation, or a run that "
                     "stopped (\"stopped after N steps: the last error was ...\" when the agent reached its step "
                     "limit or repeated a failing tool call 3 times); 2 bad arguments; 130 interrupted; "
                     "141 output closed early")
    parser.add_argument("message", help="the message to send")
    parser.add_argument("--thread", help="thread id (created if new; default: a new thread)")
    parser.add_argument("--json", action="store_true", help="print every protocol event as one JSON line")
    parser.add_argument(
        "--approve",
        choices=("all", "none", "ask"),
        help="answer confirmations: all = approve, none = deny, ask = prompt (default: ask on a terminal, else deny)",
    )
    parser.add_argument("--timeout", type=float,
                        help="give up (and cancel the run) after this many seconds in all (default: no limit)")
    parser.add_argument("--idle-timeout", type=float, default=DEFAULT_IDLE_TIMEOUT, metavar="SECONDS",
                        help="give up when no event of the run arrives for this long; pings do not count "
                             f"(default: {DEFAULT_IDLE_TIMEOUT:g}; 0 = never)")
    parser.add_argument("--max-retries", type=int, default=DEFAULT_MAX_RETRIES, metavar="N",
                        help="give up after N reconnections in a row without an event of the run "
                             f"(default: {DEFAULT_MAX_RETRIES}; 0 = never)")
    add_mcp_wait_argument(parser)
    add_connection_arguments(parser)
    add_gateway_arguments(parser)


def main(args: argparse.Namespace) -> int:
    from ..client.factory import skip_unused_optional_imports

    skip_unused_optional_imports()  # before httpx: what a short run waits for at start
    import asyncio

    policy = args.approve or ("ask" if sys.stdin.isatty() and sys.stderr.isatty() else "none")
    from .logs import install, uninstall

    # warnings of ours and of the libraries (a failed title, the mcp SDK) on stderr as visible text, one line each
    log_handler = install(fmt="instance-ai run: %(levelname)s: %(message)s")
    try:
        lean = our_server_only(args)
        if lean is not None:  # no Settings to build: what a short run waits for before its request
            return exit_now(asyncio.run(_main(None, args, policy, None, lean)))
        from ..client.gateway_flag import check_connection
        from .connection import gateway_from_args, settings_from_args

        settings = settings_from_args(args)
        gateway = gateway_from_args(args)
        remote = settings.remote
        check_connection(gateway, settings, remote.dialect or ("n8n" if remote.email else None))
        return exit_now(asyncio.run(_main(settings, args, policy, gateway)))
    except BrokenPipeError:  # stdout closed early (e.g. piped into `head`): stop quietly
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # the client's errors, imported once one happened (a short run does without them)
        from ..client.base import ClientError
        from ..client.gateway_flag import GatewayFlagError

        if not isinstance(exc, GatewayFlagError | ClientError):
            raise
        print(f"instance-ai run: {terminal_safe(str(exc))}", file=sys.stderr)
        return 2 if isinstance(exc, GatewayFlagError) else 1
    finally:
        uninstall(log_handler)


#: flags that only embedded mode, n8n or the gateway use: with any of them ``run`` builds the full ``Settings``
_NOT_OUR_SERVER_FLAGS = ("email", "mfa_code", "gateway", "gateway_allow", "db", "model", "workspace", "mcp")


def our_server_only(args: argparse.Namespace, env: dict[str, str] | None = None) -> tuple[str, str | None] | None:
    """``(url, token)`` when ``run`` goes to a server by ``--url`` and needs nothing else of the
    settings (no n8n login, gateway or embedded-mode flag; the file's ``[remote]`` table holds only
    strings and names no other dialect): then no ``Settings`` are built, and neither pydantic's
    models of the settings nor their validation are waited for before the first request. Anything
    else (``None``) goes through ``cli.connection.settings_from_args``, which reports a broken file
    or a wrong value as before. The file's other tables are not read on this path.

    The precedence is ``settings_from_args``'s: ``--url``; ``--token``, else ``INSTANCE_AI_TOKEN``,
    else the file's ``remote.token``."""
    import os

    from ..client.factory import TOKEN_ENV
    from ..config_file import ConfigFileError, config_path, read_config_file

    url = getattr(args, "url", None)
    if not url or getattr(args, "dialect", None) not in (None, "instance-ai"):
        return None
    if any(getattr(args, name, None) for name in _NOT_OUR_SERVER_FLAGS):
        return None
    try:
        data = read_config_file(config_path())
    except ConfigFileError:
        return None  # the full path says what is wrong with the file
    remote = data.get("remote", {})
    if not isinstance(remote, dict) or any(not isinstance(value, str) for value in remote.values()):
        return None
    if remote.get("email") or remote.get("dialect") not in (None, "instance-ai"):
        return None
    token = getattr(args, "token", None) or (os.environ if env is None else env).get(TOKEN_ENV) or remote.get("token")
    return url, token or None


def exit_now(code: int) -> int:
    """The run has finished and its output is written: end the process at once, without the
    interpreter's teardown (0.1-0.3 s of freeing what a finished command no longer needs), when this
    process is the command itself (``instance-ai run``, ``python -m instance_ai_tui run``); called
    from another program (a test), return ``code``."""
    import os

    spec = getattr(sys.modules.get("__main__"), "__spec__", None)
    is_command = (spec is not None and spec.name == "instance_ai_tui.__main__") or (
        os.path.basename(sys.argv[0]) == "instance-ai")
    if not is_command:
        return code
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):  # a closed pipe: the normal way out reports it
        return code
    os._exit(code)


async def _main(settings: Any, args: argparse.Namespace, policy: str, gateway: Any = None,
                lean: tuple[str, str | None] | None = None) -> int:
    import asyncio
    import signal

    sent: Sent | None = None
    resume: Handoff | None = None
    if lean is not None and args.thread is None and LeanRun.takes(lean[0]):
        # the new thread made and the message sent (and a plain run followed) before httpx and the
        # protocol's models are imported, on the standard library (issue 44.3)
        started = await LeanRun(*lean, json_mode=args.json).start(
            args.message, follow=not args.timeout, idle_timeout=getattr(args, "idle_timeout", DEFAULT_IDLE_TIMEOUT))
        if isinstance(started, int):
            return started
        sent, resume = started
    client, own_http = await open_run_client(settings, args, lean)
    shared = None
    if gateway is not None:
        from ..client import gateway_flag

        try:
            shared = await gateway_flag.start(
                client, gateway, log=lambda message: print(f"gateway: {message}", file=sys.stderr, flush=True),
                on_end=lambda message: print(f"instance-ai run: {message}", file=sys.stderr, flush=True))
        except BaseException:
            await client.close()
            raise
    loop = asyncio.get_running_loop()
    task = asyncio.current_task()
    interrupted = False

    def on_sigint() -> None:
        nonlocal interrupted
        interrupted = True
        if task is not None:
            task.cancel()

    runner = HeadlessRun(client, sent.thread_id if sent is not None else args.thread, args.message,
                         sent_run_id=sent.run_id if sent is not None else None, json_mode=args.json, policy=policy,
                         policy_chosen=args.approve is not None,
                         idle_timeout=getattr(args, "idle_timeout", DEFAULT_IDLE_TIMEOUT),
                         max_retries=getattr(args, "max_retries", DEFAULT_MAX_RETRIES), resume=resume)
    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (NotImplementedError, RuntimeError):
        pass
    notes = mcp_notes_for(settings, client)  # the embedded agent's MCP servers: failures, slow starts
    try:
        await notes.begin(getattr(args, "mcp_wait", MCP_WAIT))
        if args.timeout:
            return await asyncio.wait_for(runner.run(), args.timeout)
        return await runner.run()
    except TimeoutError:
        print(f"instance-ai run: no answer within {args.timeout} s; cancelling the run", file=sys.stderr)
        await runner.cancel()
        return 1
    except asyncio.CancelledError:
        if not interrupted:
            raise
        loop.remove_signal_handler(signal.SIGINT)
        print("\ninstance-ai run: interrupted; cancelling the run", file=sys.stderr)
        await runner.cancel()
        return 130
    finally:
        await notes.stop()
        if shared is not None:
            await shared.stop()
        await client.close()
        if own_http is not None:
            await own_http.aclose()


async def open_run_client(settings: Any, args: argparse.Namespace | None = None,
                          lean: tuple[str, str | None] | None = None) -> tuple[Client, Any]:
    """The opened client (``client.factory.open_client``), and the HTTP client to close after it
    (or None). ``lean``: ``(url, token)`` from ``our_server_only`` instead of ``settings``.

    A ``--url`` of unknown dialect is first taken for our server: the ``RemoteClient``'s own health
    request is the detection (``open_client`` asks ``/instance-ai/health`` once to detect and once
    more to open, each on an HTTP client of its own); its HTTP client loads no certificate store for
    a plain ``http://`` URL (redirects are not followed). A server that answers but is not ours
    (n8n) goes through ``open_client`` (its detection says which it is)."""
    from ..client.factory import open_client

    if lean is not None:
        url, token = lean
    else:
        remote = settings.remote
        if not remote.url or remote.dialect or remote.email:
            return await open_client(settings), None
        url, token = remote.url, remote.token.get_secret_value() if remote.token else None
    import httpx

    from ..client.base import AuthError, ClientError, ServerUnreachable
    from ..client.remote import RemoteClient, normalise_base_url

    base = normalise_base_url(url)
    http = httpx.AsyncClient(timeout=30.0, verify=base.startswith("https:"))
    client = RemoteClient(base, token, http=http)
    try:
        await client.open()
    except ClientError as exc:
        await client.close()
        await http.aclose()
        if isinstance(exc, AuthError | ServerUnreachable):
            raise
        if settings is None:  # it answered, but not as our server: n8n needs the full settings
            from .connection import settings_from_args

            assert args is not None
            settings = settings_from_args(args)
        return await open_client(settings), None
    except BaseException:
        await client.close()
        await http.aclose()
        raise
    return client, http


class HeadlessRun:
    """One message: make sure the thread exists, send, fold the events, answer confirmations."""

    def __init__(
        self,
        client: Client,
        thread_id: str | None,
        message: str,
        *,
        json_mode: bool,
        policy: str,
        sent_run_id: str | None = None,
        policy_chosen: bool = True,
        out: TextIO | None = None,
        err: TextIO | None = None,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_retries: int = DEFAULT_MAX_RETRIES,
        resume: Handoff | None = None,
    ) -> None:
        import uuid

        self.client = client
        #: no thread was given: a new one, known not to exist (no history to ask for)
        self._new_thread = thread_id is None
        self.thread_id = thread_id or str(uuid.uuid4())
        #: the message was sent already (``LeanRun.send``) and started this run, on a new thread
        self._sent_run_id = sent_run_id
        self.message = message
        self.json_mode = json_mode
        self.policy = policy
        #: False: ``--approve`` was not given and there is no terminal to ask on, so the
        #: answers are automatic denials (said so: nobody denied anything by hand)
        self.policy_chosen = policy_chosen
        self.out = out or sys.stdout
        self.err = err or sys.stderr
        self.run_id: str | None = sent_run_id
        self._printed = ""
        #: the answer's last line on stdout has no line end yet
        self._line_open = False
        #: the error events' words already printed (the run-finish line does not repeat them)
        self._errors_said: set[str] = set()
        self._tool_names: dict[str, str] = {}
        self._roles: dict[str, str] = {}
        self._answered: set[str] = set()
        self.idle_timeout = idle_timeout
        self.max_retries = max_retries
        self._progress_at = 0.0
        self._asking = False
        self._retries = 0
        self._last_attempt: int | None = None
        self._last_state = ""
        self._last_problem = ""
        self._last_id: int | None = None
        self._backwards = 0
        #: the "still waiting" note of this quiet spell was printed
        self._warned = False
        #: the quiet seconds at which the next "waiting for the model N s" note is due
        self._next_clock_note = WAIT_NOTE_EVERY
        #: the run's conversation, once it is followed (what the waiting notes name)
        self._conversation: Any = None
        #: the client's diagnostics (skipped frames) seen by the last event of the run
        self._diagnostics_seen = len(getattr(client, "diagnostics", []))
        #: what ``cli.run_lean`` followed of the run (on a new thread, after ``LeanRun.send``) before it handed over
        self._resume = resume

    async def cancel(self) -> None:
        import asyncio

        from ..client.base import ClientError

        if self.run_id is None:
            return
        try:
            await asyncio.wait_for(self.client.cancel(self.thread_id), 5)
        except (TimeoutError, ClientError) as exc:
            print(f"instance-ai run: could not cancel: {terminal_safe(str(exc)) or type(exc).__name__}", file=self.err)

    async def run(self) -> int:
        """Send the message and follow the run to its end, watched (see the module docstring)."""
        import asyncio

        loop = asyncio.get_running_loop()
        self._progress_at = loop.time()
        remove_listener = self.client.add_state_listener(self._on_state)
        follow = asyncio.ensure_future(self._follow())
        try:
            while True:
                done, _ = await asyncio.wait({follow}, timeout=0.2)
                if done:
                    return follow.result()
                now = loop.time()
                if self._asking:
                    self._progress_at = now
                problem = ""
                quiet = now - self._progress_at
                if quiet >= self._next_clock_note and not self._asking and self._server_healthy():
                    # the clock on waiting (issue 39.5): the status line's words, every WAIT_NOTE_EVERY s
                    self._next_clock_note += WAIT_NOTE_EVERY
                    self._warned = True  # (this says it: not the note for a server that sends nothing useful)
                    self._note(f"instance-ai run: {self._waiting_words(quiet)}")
                if self.idle_timeout and not self._warned and quiet > min(30.0, self.idle_timeout / 3):
                    # never silent: say what the server does while waiting for it
                    self._warned = True
                    self._note(f"instance-ai run: no event of the run for {quiet:.0f} s ({self._server_doing()}); "
                               f"giving up after {self.idle_timeout:g} s (--idle-timeout)")
                if self.max_retries and self._retries > self.max_retries:
                    problem = (f"the connection failed {self._retries} times in a row without an event of the run"
                               + (f" (last: {self._last_problem})" if self._last_problem else ""))
                elif self.idle_timeout and now - self._progress_at > self.idle_timeout:
                    problem = f"no new event of the run for {self.idle_timeout:g} s ({self._server_doing()})"
                if problem:
                    follow.cancel()
                    await asyncio.gather(follow, return_exceptions=True)
                    self._note(f"instance-ai run: giving up: {problem}; cancelling the run")
                    await self.cancel()
                    return 1
        finally:
            remove_listener()
            if not follow.done():
                follow.cancel()
                await asyncio.gather(follow, return_exceptions=True)

    def _server_healthy(self) -> bool:
        """Whether the connection is fine and only the run is quiet (no broken frames, retries, ids going back)."""
        return not self._retries and not self._backwards and not any(
            note.startswith(("skipped", "the server ended")) or "ids going backwards" in note
            for note in getattr(self.client, "diagnostics", [])[self._diagnostics_seen:])

    def _waiting_words(self, quiet: float) -> str:
        """What the run waits for, as the status line says it: a running tool, else the model."""
        message = self._conversation.message_for_run(self.run_id) if self._conversation and self.run_id else None
        reducer = getattr(message, "reducer", None)
        running = [call.name or "a tool" for call in reducer.calls() if call.loading] if reducer is not None else []
        if running:
            return f"running {running[-1]} {quiet:.0f} s"
        return f"waiting for the model {quiet:.0f} s"

    def _server_doing(self) -> str:
        """What the server sent instead of the run's events, in words (for the waiting notes)."""
        if self.run_id is None:
            return "the server has not answered the message yet"
        skipped = [note for note in getattr(self.client, "diagnostics", [])[self._diagnostics_seen:]
                   if note.startswith(("skipped malformed frame", "skipped SSE frame"))]
        if skipped:
            return (f"the server sent {len(skipped)} broken frame(s), the last: "
                    f"{terminal_safe(skipped[-1]).removeprefix('skipped ')[:160]}")
        backwards = self._backwards + sum(1 for note in getattr(self.client, "diagnostics", [])[self._diagnostics_seen:]
                                          if "ids going backwards" in note)
        if backwards:
            return f"the server sent {backwards} events with ids going backwards, ignored"
        if self._retries:
            last = f", last: {self._last_problem}" if self._last_problem else ""
            return f"{self._retries} reconnections{last}"
        return "the server sends only keep-alives or events already received"

    def _on_state(self, state: Any, detail: str) -> None:
        from ..client.base import ConnectionState

        match = re.search(r"attempt (\d+)", detail)
        if state == ConnectionState.RECONNECTING and match:
            attempt = int(match.group(1))
            if attempt != self._last_attempt or self._last_state == ConnectionState.CONNECTED:
                self._retries += 1
                self._note(f"instance-ai run: connection lost; reconnecting {detail}")
            self._last_attempt = attempt
        elif state == ConnectionState.OFFLINE and detail:
            self._last_problem = terminal_safe(detail)[:200]
        elif state == ConnectionState.RECONNECTING and detail:
            self._last_problem = terminal_safe(detail)[:200]
        self._last_state = state

    def _progressed(self, event_id: int | None) -> None:
        import asyncio

        if event_id is not None and self._last_id is not None and event_id <= self._last_id:
            self._backwards += 1
            return
        if event_id is not None:
            self._last_id = event_id
        self._progress_at = asyncio.get_running_loop().time()
        self._retries = 0
        self._warned = False
        self._next_clock_note = WAIT_NOTE_EVERY
        self._diagnostics_seen = len(getattr(self.client, "diagnostics", []))

    async def _follow(self) -> int:
        from ..client.base import NotFoundError
        from ..protocol.conversation import Conversation

        resume = self._resume
        if self._sent_run_id is not None:
            cursor = resume.cursor if resume is not None else 0  # a new thread: everything in it is this run's
        elif self._new_thread:
            await self.client.create_thread(self.thread_id)
            cursor = 0
        else:
            try:
                history = await self.client.messages(self.thread_id)
                cursor = history.next_event_id - 1
            except NotFoundError:
                await self.client.create_thread(self.thread_id)
                cursor = 0
        if self._sent_run_id is None:
            self.run_id = await self.client.send(self.thread_id, self.message)
            self._progressed(None)  # the run exists from here: its clock starts now, not at the send
        if not self.json_mode and resume is None:
            self._note(f"[thread {self.thread_id} · run {self.run_id}]")
        conversation = self._conversation = Conversation(self.thread_id)
        if resume is not None and resume.events:  # printed already: folded, not printed again
            from ..protocol.ingest import decode

            conversation.fold([decode(event_id, data) for event_id, data in resume.events])
            self._printed, self._line_open, self._last_id = resume.printed, resume.line_open, resume.cursor
        runs = {self.run_id}
        # closed here when the run ends (not left to asyncio.run's shutdown, which closed the nested
        # generators all at once: "aclose(): asynchronous generator is already running" on stderr)
        async with aclosing(cast("AsyncGenerator[Any, None]", self.client.events(self.thread_id, after=cursor))) as items:
            return await self._fold_items(items, conversation, runs)

    async def _fold_items(self, items: AsyncIterator[Any], conversation: Any, runs: set[str | None]) -> int:
        from ..protocol.events import ConfirmationRequestEvent

        async for item in items:
            if item.run_sync is not None:
                conversation.fold([item])
                if item.run_sync.run_id in runs or set(item.run_sync.run_ids) & runs:
                    self._progressed(item.id)
                    self._emit_json({"type": "run-sync", "payload": item.run_sync.to_wire()})
                continue
            event = item.event
            if event is None or event.run_id not in runs:
                continue
            self._progressed(item.id)
            conversation.fold([item])
            self._emit_json(event.to_wire())
            if not self.json_mode:
                self._show(event, conversation)
            if isinstance(event, ConfirmationRequestEvent):
                follow_up = await self._answer(event.payload, conversation)
                if follow_up and follow_up not in runs:
                    runs.add(follow_up)
                    self.run_id = follow_up
            elif event.type == "run-finish" and event.run_id == self.run_id:
                return self._finish(event)
        return 1  # the stream cannot end without a run-finish; a remote client raises instead

    # ----------------------------------------------------------------- output
    def _emit_json(self, data: dict[str, Any]) -> None:
        if self.json_mode:
            if "threadId" not in data:  # each line names its thread: a reader can follow up (--thread, export)
                data = {**data, "threadId": self.thread_id}
            self.out.write(json_line(data) + "\n")
            self.out.flush()

    def _note(self, text: str) -> None:
        print(terminal_safe(text), file=self.err, flush=True)

    def _write(self, text: str) -> None:
        if not text:
            return
        self.out.write(terminal_safe(text))
        self.out.flush()
        self._line_open = not text.endswith("\n")

    def _show(self, event: Event, conversation: Any) -> None:
        from ..protocol.text_render import summarize_result, task_glyph

        kind = event.type
        payload: Any = getattr(event, "payload", None)
        if kind in ("text-delta", "text-block", "run-finish"):
            message = conversation.message_for_run(event.run_id)
            text = message.content if message is not None else ""
            if text.startswith(self._printed) and len(text) > len(self._printed):
                self._write(text[len(self._printed) :])
                self._printed = text
            return
        agent = self._roles.get(event.agent_id, "")
        who = f"{agent}: " if agent else ""
        if kind == "agent-spawned":
            self._roles[event.agent_id] = payload.role or "sub-agent"
            self._note(f"▶ sub-agent {payload.role or event.agent_id}")
        elif kind == "agent-completed":
            outcome = payload.error or summarize_result(payload.result, 100)
            self._note(f"◀ {payload.role or agent or event.agent_id}: {outcome}")
        elif kind == "tool-call" and (payload.model_extra or {}).get("autoApproved") is True:
            from ..protocol.display_state import AUTO_APPROVED_LABEL

            name = self._tool_names.get(payload.tool_call_id, payload.tool_name or "tool")
            self._note(f"  ↳ {name}: {AUTO_APPROVED_LABEL}")
        elif kind == "tool-call" and (payload.model_extra or {}).get("answered") is True:
            pass  # the person's answer resumed the call (a repeated tool-call: not a new call)
        elif kind == "tool-call" and isinstance(progress := (payload.model_extra or {}).get("progress"), str):
            # an MCP tool's progress while it runs (a repeated tool-call: not a new call)
            name = self._tool_names.get(payload.tool_call_id, payload.tool_name or "tool")
            self._note(f"  ↳ {name}: {progress}")
        elif kind == "tool-call":
            self._tool_names[payload.tool_call_id] = payload.tool_name
            self._note(f"⚙ {who}{payload.tool_name} {summarize_result(payload.args, 100)}")
        elif kind in ("tool-result", "tool-error", "tool-interrupted"):
            self._note(self._outcome_line(event, conversation))
        elif kind == "tasks-update":
            for task in payload.tasks.tasks:
                self._note(f"  {task_glyph(task.status)} {task.description}")
        elif kind == "error":
            # said once, on stderr: not again in the answer on stdout (the reducer adds "*Error: …*" to
            # the text, as n8n does) nor in the run-finish line
            message = conversation.message_for_run(event.run_id)
            text = message.content if message is not None else ""
            said = f"\n\n*Error: {payload.content}*"
            if text.endswith(said) and text.startswith(self._printed):
                self._write(text[len(self._printed):len(text) - len(said)])
                self._printed = text
            self._errors_said.add(str(payload.content))
            self._note(f"error: {payload.content}")
        elif kind == "thread-title-updated":
            self._note(f"[title: {payload.title}]")
        elif kind == "status" and isinstance((payload.model_extra or {}).get("retry"), dict):
            self._note(f"instance-ai run: {payload.message}")  # "retrying in 4 s (2/3): HTTP 429 …"
        elif kind == "context-compacted":
            self._note(f"⟲ {payload.words()}")  # the same line as the TUI's row

    def _outcome_line(self, event: Any, conversation: Any) -> str:
        """``✓ name → result`` / ``✗ name: denied`` / ``✗ name: failed: …`` / ``⊘ name: not run``,
        as ``protocol.display_state`` decides (the same words as the TUI and export)."""
        from ..protocol.display_state import AUTO_APPROVED_LABEL, display_state
        from ..protocol.text_render import summarize_result

        payload = event.payload
        name = self._tool_names.get(payload.tool_call_id, "tool")
        message = conversation.message_for_run(event.run_id)
        call = message.reducer.tool_call(payload.tool_call_id) if message is not None and message.reducer else None
        if call is None:
            error = getattr(payload, "error", None)
            return f"  ✗ {name}: failed: {error}" if error is not None else f"  ✓ {name} → {summarize_result(payload.result, 100)}"
        state = display_state(call, run_active=True, resolved=True)
        auto = f" ({AUTO_APPROVED_LABEL})" if state.auto_approved else ""
        if state.kind == "done":
            said = f" ({state.label})" if state.label != "done" else ""  # plan approved, partly done, ...
            return f"  ✓ {name}{auto}{said} → {summarize_result(call.result, 100)}"
        if state.kind == "failed":
            return f"  ✗ {name}{auto}: failed: {call.error}" if call.error is not None else f"  ✗ {name}{auto}: {state.label}"
        if state.kind == "denied":
            return f"  ✗ {name}: {state.label}"  # "denied", or "plan rejected"
        return f"  ⊘ {name}: {state.label}"

    def _finish(self, event: Any) -> int:
        status, reason = event.payload.status, event.payload.reason
        if "status" not in event.payload.model_fields_set:
            status = "unknown"  # the model's default is "completed"; a finish that does not say is not a success
            reason = reason or "the server's run-finish has no status"
        if not self.json_mode:
            if self._line_open:
                self._write("\n")
            if status != "completed":
                repeated = bool(reason) and str(reason) in self._errors_said
                self._note(f"run {status}" + (f": {reason}" if reason and not repeated else ""))
            from ..protocol.usage_words import usage_line

            spent = usage_line((getattr(event.payload, "model_extra", None) or {}).get("usage"))
            if spent:
                self._note(f"[{spent}]")
        return 0 if status == "completed" else 1

    # ----------------------------------------------------------------- confirmations
    async def _answer(self, request: ConfirmationPayload, conversation: Any = None) -> str | None:
        if request.request_id in self._answered:
            return None
        self._answered.add(request.request_id)
        if not request.args and conversation is not None and request.tool_call_id:
            # the request refers to its tool call's arguments (the tool-call event carried them)
            message = conversation.message_for_run(self.run_id) if self.run_id else None
            call = message.reducer.tool_call(request.tool_call_id) if message is not None and message.reducer else None
            if call is not None and call.args:
                request = request.model_copy(update={"args": dict(call.args)})
        if self.policy == "ask" and not server_form(request):
            self._asking = True  # the idle timer waits for the person
            try:
                body = await self._ask(request)
            finally:
                self._asking = False
        else:
            body = auto_answer(request, approve=self.policy == "all")
        self._asking = False
        if not self.json_mode:
            answer = describe_answer(body, request)
            if not self.policy_chosen and not server_form(request):
                answer = (f"{answer} automatically: no terminal to ask on "
                          "(pass --approve all or --approve none to choose)")
            self._note(f"  ? {request.message} → {answer}")
        response = await self.client.confirm(request.request_id, body)
        if conversation is not None:
            conversation.mark_confirmation_resolved(request.request_id, _approved(body, request))
        return response.run_id

    async def _ask(self, request: ConfirmationPayload) -> ConfirmBody:
        import asyncio

        from ..protocol.api import ApprovalConfirm, QuestionAnswer, QuestionsConfirm

        def prompt(text: str) -> str:
            self.err.write(terminal_safe(text))
            self.err.flush()
            try:
                return input()
            except EOFError:
                return ""

        if request.effective_input_type == "questions" and request.questions:
            if request.intro_message:
                self._note(request.intro_message)
            answers = []
            for question in request.questions:
                options = question.options or []
                listing = "".join(f"\n    {i}. {option}" for i, option in enumerate(options, 1))
                raw = (await asyncio.to_thread(prompt, f"  {question.question}{listing}\n  > ")).strip()
                if raw.isdigit() and 1 <= int(raw) <= len(options):
                    answers.append(QuestionAnswer(question_id=question.id, selected_options=[options[int(raw) - 1]]))
                elif raw:
                    answers.append(QuestionAnswer(question_id=question.id, custom_text=raw))
                else:
                    answers.append(QuestionAnswer(question_id=question.id, skipped=True))
            return QuestionsConfirm(answers=answers)
        args = _summary(request.args)
        raw = await asyncio.to_thread(
            prompt, f"  [{request.severity}] {request.message}\n  {request.tool_name} {args}\n  approve? [y/N] "
        )
        return ApprovalConfirm(approved=raw.strip().lower() in ("y", "yes"))


def _summary(args: dict[str, Any]) -> str:
    from ..protocol.text_render import summarize_result

    return summarize_result(args, 120) if args else ""
