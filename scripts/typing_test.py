#!/usr/bin/env python
"""The typing test of issue 32: ordinary English typed at random times never answers a card.

It drives the real app (``instance-ai``, embedded, with a workspace) in tmux, against a real
OpenAI-compatible model server (``tests.support.openai_server``, in this process) scripted to
raise cards — write-file, activate-workflow, a question (ask-user), a plan review — after a
random delay of 0.3–3 s, so they appear at unpredictable moments. For ``--duration`` seconds it
types sentences full of a, y, n, d, r, e, c, k (one key at a time, at a typist's pace) in these
situations, chosen at random:

* ``empty-prompt``   — from the empty prompt, a card maybe appearing meanwhile;
* ``after-esc``      — right after Esc;
* ``after-cancel``   — right after Ctrl+C stopped a run waiting for its card;
* ``thread-list``    — with the thread list focused (Ctrl+B): words must land in its search;
* ``card-appears``   — a message is sent and typing starts at once, while its card appears;
* ``card-on-screen`` — 0.5–3 s after a card appeared;
* ``start-ctrl-n``   — the app is restarted, Ctrl+N pressed at its first frame, a message typed
  and sent at once.

Every typed sentence must end where it was typed: a sentence typed for the prompt is then sent
(Esc stops a waiting run first) and the model must receive exactly it; words typed in the thread
list must show in its search field. Throughout: no request to the model may carry a tool result
(a card answered — approve, deny, a question — gives the model one), the workspace stays empty,
no copy is made (no clipboard file), nothing the screen shows says copied, deleted, renamed or
"always allow". After the random phase the app is closed and the store checked: as many threads
as were started, none renamed, no "always allow" grant. Then the deliberate answers must work:
Ctrl+G then y (the file is written), and Ctrl+G, a, Enter (the grant is made).

Usage::

    python scripts/typing_test.py [--duration 300] [--size 160x48] [--seed N] [--json]

Exit code 0 when every check held; it prints one line per step and a summary.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shlex
import shutil
import signal
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tests.support.openai_server import MockOpenAIServer, MockResponse, MockToolCall  # noqa: E402

WORDS = (
    "and any yes no daily ready read each check key keep deny delay rename delete card yearly error "
    "record decide entry track kind year day darkly rack cake dance candy nearly cranky add also a "
    "filter every week are near dark yak neck crane knack decade endear yearn racy cyan drake"
).split()
#: sentences of the issue and of people typing the next message while a card appears
FIXED = (
    "and also add a filter",
    "yes send it every day at noon",
    "delete the old ones and rename the new card",
    "check each key and keep a copy",
    "any error: retry daily, deny nothing yet",
)
SCENARIOS = ("empty-prompt", "after-esc", "after-cancel", "thread-list", "card-appears", "card-on-screen",
             "start-ctrl-n")
#: words on the screen that would mean a key acted on something (a copy, a rewind, a deletion...)
DANGER = ("Copied", "saved in", "Edit the message", "Retrying", "This cannot be undone", "Enter to save",
          "Always allow?", "always allowed", "→ approved", "→ denied", "→ answered", "→ plan approved",
          "→ plan rejected", "changes requested")


async def poll(predicate: Any, timeout: float, step: float = 0.05) -> bool:
    """Wait until ``predicate()`` holds (True) or ``timeout`` seconds pass (False)."""
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            return False
        await asyncio.sleep(step)
    return True


def log(line: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {line}", flush=True)


@dataclass
class Stats:
    sentences: int = 0
    characters: int = 0
    cards_seen: int = 0
    by_scenario: dict[str, int] = field(default_factory=dict)
    failures: list[str] = field(default_factory=list)


class Model:
    """The scripted model: a card for most messages, after a random delay; text after a tool result."""

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.count = 0
        self.titles: set[str] = set()
        self.forced: str | None = None  # the deliberate phase picks the card
        #: cards the model raised (a tool call that asks first), by tool
        self.cards: dict[str, int] = {}

    def respond(self, body: dict[str, Any]) -> MockResponse:
        messages = body.get("messages") or []
        last = messages[-1] if messages else {}
        user = next((m for m in reversed(messages) if m.get("role") == "user"), {})
        text = user.get("content") if isinstance(user.get("content"), str) else ""
        if text.startswith("User message:"):  # the thread's title
            self.count += 1
            title = f"Typing test thread {self.count}"
            self.titles.add(title)
            return MockResponse(text=json.dumps({"title": title}))
        if last.get("role") == "tool":
            return MockResponse(text="Done.")
        tools = {t.get("function", {}).get("name") for t in body.get("tools") or []}
        kinds = [k for k in ("write-file", "activate-workflow", "ask-user", "plan") if k in tools]
        if self.forced is not None:
            kind: str | None = self.forced if self.forced in tools else (kinds[0] if kinds else None)
        else:
            kind = self.rng.choice(kinds) if kinds and self.rng.random() < 0.9 else None
        delay = 0.3 if self.forced else self.rng.uniform(0.3, 3.0)
        if kind is None:
            return MockResponse(text="All right.", first_chunk_delay=delay)
        self.count += 1
        self.cards[kind] = self.cards.get(kind, 0) + 1
        n = self.count
        args: dict[str, Any] = {
            "write-file": {"path": f"note-{n}.txt", "content": "written by the agent\n"},
            "activate-workflow": {"workflowId": f"wf-{n}"},
            "ask-user": {"questions": [{"id": "when", "question": "When should it run?", "type": "single",
                                        "options": ["daily", "yearly", "never"]}]},
            "plan": {"action": "create", "goal": "Build it", "review": True,
                     "tasks": [{"id": "t1", "description": "Build the workflow", "status": "pending"},
                               {"id": "t2", "description": "Activate it", "status": "pending"}]},
        }[kind]
        return MockResponse(tool_calls=[MockToolCall(name=kind, arguments=args)], first_chunk_delay=delay)


class TmuxError(RuntimeError):
    """A tmux command failed: its arguments, exit status and what tmux said."""


class Tmux:
    """The app's terminal: one session on a tmux server of this run's own (``-S`` a socket in the
    work dir: never the person's default server, never another run's).

    The session is created once and its pane respawned for each start of the app. Killing the
    last session makes tmux's server exit, and a ``new-session`` in that moment fails ("server
    exited unexpectedly") -- which, unchecked, left an empty pane and "no first frame in 60 s"
    (the flake of ``start-ctrl-n``, which quits and starts the app again). Every command that
    must work is checked (``TmuxError`` names it and what tmux said)."""

    def __init__(self, session: str, width: int, height: int, socket: Path) -> None:
        self.session, self.width, self.height, self.socket = session, width, height, socket

    async def call(self, *args: str) -> tuple[int, str, str]:
        proc = await asyncio.create_subprocess_exec("tmux", "-S", str(self.socket), *args,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        return proc.returncode or 0, out.decode("utf-8", "replace"), err.decode("utf-8", "replace")

    async def run(self, *args: str, check: bool = False) -> str:
        code, out, err = await self.call(*args)
        if check and code != 0:
            raise TmuxError(f"tmux {shlex.join(args)} failed (exit {code}): {err.strip() or out.strip()}")
        return out

    async def exists(self) -> bool:
        return (await self.call("has-session", "-t", self.session))[0] == 0

    async def start(self, command: str) -> None:
        """``command`` in the session's pane (a pane still running is killed first). A pane whose
        program exits stays with its last screen (remain-on-exit: a crash stays readable)."""
        if await self.exists():
            await self.run("respawn-pane", "-k", "-t", self.session, command, check=True)
        else:
            await self.run("new-session", "-d", "-s", self.session, "-x", str(self.width), "-y", str(self.height),
                           command, ";", "set-option", "-t", self.session, "remain-on-exit", "on", check=True)

    async def pane(self) -> dict[str, str]:
        """The pane's state: ``dead`` ("1" once its program exited), ``exit`` (how: "status 0",
        "status 2", "signal 6"; tmux 3.3 leaves a status 0 empty), ``pid``."""
        out = await self.run("display-message", "-p", "-t", self.session,
                             "#{pane_dead}|#{pane_dead_status}|#{pane_dead_signal}|#{pane_pid}")
        dead, status, signal_number, pid = [*out.strip().split("|"), "", "", "", ""][:4]
        how = f"signal {signal_number}" if signal_number else f"status {status or 0}"
        return {"dead": dead, "exit": how if dead == "1" else "", "pid": pid}

    async def keys(self, *keys: str) -> None:
        for key in keys:
            await self.run("send-keys", "-t", self.session, key)
            if key == "Escape":
                # a person's next key comes later than a terminal's escape sequence would: a
                # letter right behind ESC (in the same read) is Alt+letter to every terminal app
                await asyncio.sleep(0.2)

    async def literal(self, text: str) -> None:
        await self.run("send-keys", "-t", self.session, "-l", text)

    async def screen(self) -> str:
        return await self.run("capture-pane", "-p", "-t", self.session)

    async def history(self) -> str:
        """The screen with the 200 lines above it (once the program exited, tmux's "Pane is dead"
        line scrolls what it wrote last up there)."""
        return await self.run("capture-pane", "-p", "-S", "-200", "-t", self.session)

    async def stop(self) -> None:
        await self.run("kill-server")


class TypingTest:
    def __init__(self, args: argparse.Namespace) -> None:
        self.args = args
        self.rng = random.Random(args.seed)
        width, height = (int(v) for v in args.size.lower().split("x"))
        self.work = Path(tempfile.mkdtemp(prefix="typing-test-"))
        self.workspace = self.work / "workspace"
        self.workspace.mkdir()
        self.db = self.work / "db.sqlite3"
        self.tmux = Tmux(f"typing-{os.getpid()}", width, height, self.work / "tmux.sock")
        self.model = Model(self.rng)
        self.server: MockOpenAIServer | None = None
        self.stats = Stats()
        self.narrow = width < 100

    # ----------------------------------------------------------------- the app
    def command(self) -> str:
        assert self.server is not None
        env = {
            "OPENAI_BASE_URL": self.server.base_url, "OPENAI_API_KEY": "sk-typing-test",
            "XDG_CONFIG_HOME": str(self.work / "config"), "XDG_DATA_HOME": str(self.work / "data"),
            "INSTANCE_AI_CONFIG": str(self.work / "config" / "config.toml"), "TERM": "xterm-256color",
            "PYTHONFAULTHANDLER": "1",  # a crash, or SIGABRT from post_mortem, prints every thread's stack
            # n8n's public API, so the agent has activate-workflow (whose card comes before any call:
            # nothing listens there, and no card is answered in the random phase)
            "N8N_URL": "http://127.0.0.1:9", "N8N_API_KEY": "typing-test",
        }
        app = shutil.which("instance-ai") or "instance-ai"
        exports = " ".join(f"{k}={shlex.quote(v)}" for k, v in env.items())
        return (f"env {exports} {shlex.quote(app)} --db {shlex.quote(str(self.db))} "
                f"--workspace {shlex.quote(str(self.workspace))} --model scripted-typing")

    async def start_app(self, *, ctrl_n_at_first_frame: bool = False) -> float:
        """Start the app; returns the seconds until its first frame."""
        started = time.monotonic()
        await self.tmux.start(self.command())
        while time.monotonic() - started < 60:
            screen = await self.tmux.screen()
            if "keys: " in screen:
                if ctrl_n_at_first_frame:
                    await self.tmux.keys("C-n")
                return time.monotonic() - started
            await asyncio.sleep(0.02)
        raise RuntimeError(f"the app did not draw its first frame in 60 s (load {os.getloadavg()}):\n"
                           f"{await self.post_mortem()}")

    async def post_mortem(self) -> str:
        """What the app left, for a failure's message: whether it runs or exited (and how), its
        screen and scrollback, the tail of its log file. An app still running is sent SIGABRT
        first, so Python's fault handler (PYTHONFAULTHANDLER, set by ``command``) writes where
        each of its threads is onto its screen."""
        parts: list[str] = []
        try:
            pane = await self.tmux.pane()
            if pane["dead"] == "1":
                parts.append(f"the app exited ({pane['exit']})")
            elif pane["pid"].isdigit():
                parts.append(f"the app (pid {pane['pid']}) still runs: sent SIGABRT for its threads' stacks")
                os.kill(int(pane["pid"]), signal.SIGABRT)
                await poll(lambda: False, 1.5)
            else:
                parts.append(f"no pane: {await self.tmux.run('list-sessions')!r}")
            history = await self.tmux.history()
            parts.append("its pane:\n" + (history.strip("\n") or "(empty)"))
        except (OSError, TmuxError) as exc:
            parts.append(f"tmux: {exc}")
        log_file = self.work / "data" / "instance-ai" / "instance-ai.log"
        try:
            tail = log_file.read_text(encoding="utf-8", errors="replace").splitlines()[-40:]
            parts.append(f"{log_file}:\n" + ("\n".join(tail) or "(empty)"))
        except OSError as exc:
            parts.append(f"no log: {exc}")
        return "\n".join(parts)

    async def wait_ready(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            screen = await self.tmux.screen()
            if "starting…" not in screen and "Loading…" not in screen and "keys: " in screen:
                return
            await asyncio.sleep(0.1)
        raise RuntimeError("the app did not open its first thread in 30 s")

    async def quit_app(self) -> None:
        """Ctrl+Q: the app must exit, with status 0 (its pane stays, dead, for the next start)."""
        await self.tmux.keys("C-q")
        deadline = time.monotonic() + 30  # generous: a loaded machine
        while (pane := await self.tmux.pane())["dead"] != "1":
            if time.monotonic() > deadline:
                self.fail(f"Ctrl+Q did not close the app in 30 s:\n{await self.post_mortem()}")
                return
            await asyncio.sleep(0.05)
        if pane["exit"] != "status 0":
            self.fail(f"the app exited with {pane['exit']} at Ctrl+Q:\n{await self.post_mortem()}")

    # ----------------------------------------------------------------- what the screen says
    async def status(self) -> str:
        lines = [line for line in (await self.tmux.screen()).splitlines() if "keys: " in line]
        return lines[-1] if lines else ""

    async def keys_at(self) -> str:
        """The status line's "keys: …" (a notice may cover it for a few seconds on a small screen)."""
        deadline = time.monotonic() + 8
        while True:
            match = re.search(r"keys: ([a-z ]+?)(?: · |\s{2}|│|$)", await self.status())
            if match or time.monotonic() > deadline:
                return match.group(1).strip() if match else "?"
            await asyncio.sleep(0.1)

    async def busy(self) -> bool:
        """A run of the open thread works or waits ("1 in “other thread”" is not this one's)."""
        status = await self.status()
        return "running" in status or "awaiting" in status or "cancell" in status  # (cut at 80 columns)

    async def wait_idle(self, timeout: float = 15.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not await self.busy():
                return True
            await asyncio.sleep(0.1)
        return False

    async def wait_card(self, timeout: float = 8.0) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            status = await self.status()
            if "awaiting" in status or " here (" in status:
                self.stats.cards_seen += 1
                return True
            await asyncio.sleep(0.05)
        return False

    async def poll_screen(self, predicate: Any, timeout: float = 10.0) -> bool:
        """Until the screen shows what ``predicate`` wants (the app may lag on a loaded machine)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate(await self.tmux.screen()):
                return True
            await asyncio.sleep(0.05)
        return False

    def fail(self, what: str) -> None:
        self.stats.failures.append(what)
        log(f"FAIL {what}")
        if self.args.stop_on_failure:
            log(f"stopped; work dir kept: {self.work} (the app's terminal: tmux -S {self.tmux.socket} attach)")
            raise SystemExit(1)

    async def check_screen(self, where: str) -> None:
        screen = await self.tmux.screen()
        for word in DANGER:
            if word in screen:
                self.fail(f"{where}: the screen says {word!r}:\n{screen}")
                return

    # ----------------------------------------------------------------- typing
    def sentence(self, limit: int) -> str:
        if self.rng.random() < 0.3:
            text = self.rng.choice(FIXED)
        else:
            text = " ".join(self.rng.choice(WORDS) for _ in range(self.rng.randint(4, 9)))
        return text[:limit].rstrip()

    async def type(self, text: str, pace: tuple[float, float] = (0.03, 0.12)) -> None:
        for char in text:
            await self.tmux.literal(char)
            await asyncio.sleep(self.rng.uniform(*pace))
        self.stats.sentences += 1
        self.stats.characters += len(text)

    def user_texts(self) -> list[str]:
        assert self.server is not None
        texts = []
        for request in self.server.requests:
            for message in request.body.get("messages") or []:
                content = message.get("content")
                if message.get("role") == "user" and isinstance(content, str) and not content.startswith("User message:"):
                    texts.append(content)
        return texts

    async def send_typed(self, text: str, where: str) -> None:
        """What was typed must be the prompt's text: stop a waiting run (Esc in the prompt), send,
        and the model must receive exactly ``text``."""
        if await self.keys_at() != "prompt":
            self.fail(f"{where}: keys went to {await self.keys_at()!r} after typing {text!r}")
            await self.tmux.keys("C-l")  # back to the prompt (focus-input) to go on
        if await self.busy():
            await self.tmux.keys("Escape")
            if not await self.wait_idle():
                self.fail(f"{where}: Esc in the prompt did not stop the run")
                return
        before = len(self.user_texts())
        await self.tmux.keys("Enter")
        deadline = time.monotonic() + 45  # generous: a loaded machine makes the app lag
        stopped_at = time.monotonic()
        while time.monotonic() < deadline:
            if text in self.user_texts()[before:]:
                return
            if (time.monotonic() - stopped_at > 3 and await self.busy()
                    and f"queued: {text[:12]}" in await self.tmux.screen()):
                # a card arrived just as it was sent: the message waits in the queue (as it
                # should); stop that run (Esc in the prompt) and the queue sends it
                await self.tmux.keys("Escape")
                stopped_at = time.monotonic()
            await asyncio.sleep(0.05)
        got = self.user_texts()[before:]
        self.fail(f"{where}: typed {text!r}, the model received {got!r}\n{await self.tmux.screen()}")

    def limit(self) -> int:
        return 50 if self.narrow else 90

    # ----------------------------------------------------------------- scenarios
    async def ensure_card(self) -> bool:
        status = await self.status()
        if "awaiting" in status or " here (" in status:
            return True
        if await self.busy():
            await self.tmux.keys("Escape")
            await self.wait_idle()
        await self.type("make the daily report ready")
        await self.send_typed("make the daily report ready", "ensure-card")
        return await self.wait_card()

    async def scenario(self, name: str) -> None:
        text = self.sentence(self.limit())
        if name == "empty-prompt":
            await asyncio.sleep(self.rng.uniform(0, 1.5))
            await self.type(text)
            await self.check_screen(name)
            await self.send_typed(text, name)
        elif name == "after-esc":
            await self.tmux.keys("Escape")
            await asyncio.sleep(self.rng.uniform(0.0, 0.3))
            await self.type(text)
            await self.check_screen(name)
            await self.send_typed(text, name)
        elif name == "after-cancel":
            if not await self.ensure_card():
                log("  (no card appeared: the model chose plain text)")
            await self.tmux.keys("C-c")  # the prompt is empty: stops the run and its card
            await self.type(text)
            await self.check_screen(name)
            await self.send_typed(text, name)
        elif name == "thread-list":
            for _ in range(4):
                if await self.keys_at() == "thread list":
                    break
                await self.tmux.keys("C-b")
                await asyncio.sleep(0.5)
            if await self.keys_at() != "thread list":
                self.fail(f"{name}: Ctrl+B did not reach the thread list ({await self.keys_at()!r})")
                await self.tmux.keys("C-l")  # back to the prompt to go on
                return
            words = " ".join(self.rng.choice(WORDS) for _ in range(3))[:18].rstrip()
            await self.type(words)
            shown = await self.poll_screen(lambda screen: words in screen and "keys: thread search" in screen)
            if not shown:
                self.fail(f"{name}: typed {words!r} in the thread list; keys at {await self.keys_at()!r}\n"
                          f"{await self.tmux.screen()}")
            await self.check_screen(name)
            for key in ("Escape", "Escape", "Escape"):  # clear the search, leave it, back to the prompt
                await self.tmux.keys(key)
                await asyncio.sleep(0.2)
            if not await self.poll_screen(lambda screen: "keys: prompt" in screen):
                self.fail(f"{name}: Esc did not lead back to the prompt ({await self.keys_at()!r})")
                await self.tmux.keys("C-l")
        elif name == "card-appears":
            if await self.busy():
                await self.tmux.keys("Escape")
                await self.wait_idle()
            first = self.sentence(self.limit())
            await self.type(first, pace=(0.01, 0.03))
            await self.send_typed(first, name)
            await self.type(text, pace=(0.05, 0.15))  # the card appears 0.3-3 s after the send
            await self.check_screen(name)
            await self.send_typed(text, name)
        elif name == "card-on-screen":
            if not await self.ensure_card():
                log("  (no card appeared: the model chose plain text)")
            await asyncio.sleep(self.rng.uniform(0.5, 3.0))
            await self.type(text)
            await self.check_screen(name)
            await self.send_typed(text, name)
        elif name == "start-ctrl-n":
            await self.quit_app()
            await self.start_app(ctrl_n_at_first_frame=True)
            await asyncio.sleep(self.rng.choice((0.0, 0.1, 0.3, 0.5)))
            await self.type(text, pace=(0.005, 0.02))
            before = len(self.user_texts())
            await self.tmux.keys("Enter")
            if not await poll(lambda: text in self.user_texts()[before:], 30):
                self.fail(f"{name}: a message sent right after Ctrl+N at the first frame did not reach the model\n"
                          f"{await self.tmux.screen()}")
            await self.wait_ready()

    # ----------------------------------------------------------------- checks
    def answered_cards(self) -> list[str]:
        """Tool results the model was given, once each (a request repeats the thread's history)."""
        assert self.server is not None
        out: dict[str, str] = {}
        for request in self.server.requests:
            for message in request.body.get("messages") or []:
                if message.get("role") == "tool":
                    out.setdefault(str(message.get("tool_call_id")), str(message.get("content"))[:120])
        return list(out.values())

    def first_turns(self) -> int:
        """Runs that started a thread: a request with one user message and nothing else said yet."""
        assert self.server is not None
        count = 0
        for request in self.server.requests:
            messages = [m for m in request.body.get("messages") or [] if m.get("role") != "system"]
            if (len(messages) == 1 and messages[0].get("role") == "user"
                    and not str(messages[0].get("content")).startswith("User message:")):
                count += 1
        return count

    async def check_store(self, *, grants_expected: bool) -> list[Any]:
        from instance_ai_tui.client.embedded import EmbeddedClient
        from instance_ai_tui.config import ModelSettings, Settings

        settings = Settings(db_path=self.db, model=ModelSettings(name="demo"))
        client = EmbeddedClient(settings)
        await client.open()
        try:
            threads = await client.list_threads()
            grants = {t.id: (await client.permissions(t.id)).always_allow for t in threads}
        finally:
            await client.close()
        renamed = [t.title for t in threads if t.title and t.title not in self.model.titles]
        if renamed:
            self.fail(f"threads renamed: {renamed!r}")
        if not grants_expected and any(grants.values()):
            self.fail(f"always-allow granted: {grants!r}")
        return [threads, grants]

    # ----------------------------------------------------------------- the run
    async def run(self) -> int:
        if shutil.which("tmux") is None:
            print("tmux is not installed (apt-get install tmux)", file=sys.stderr)
            return 2
        async with MockOpenAIServer(self.model.respond) as server:
            self.server = server
            try:
                return await self._run()
            finally:
                if not self.args.stop_on_failure or not self.stats.failures:
                    await self.tmux.stop()

    async def _run(self) -> int:
        args = self.args
        scenarios = tuple(name for name in args.scenarios.split(",") if name)
        unknown = [name for name in scenarios if name not in SCENARIOS]
        if unknown or not scenarios:
            raise SystemExit(f"unknown scenario(s) {unknown!r}: choose from {', '.join(SCENARIOS)}")
        log(f"typing test: {self.tmux.width}x{self.tmux.height}, {args.duration:.0f} s, seed {args.seed}, "
            f"model server {self.server.base_url if self.server else '?'}, work dir {self.work}")
        await self.start_app()
        await self.wait_ready()
        started = time.monotonic()
        while time.monotonic() - started < args.duration:
            name = self.rng.choice(scenarios)
            self.stats.by_scenario[name] = self.stats.by_scenario.get(name, 0) + 1
            log(f"{name}")
            await self.scenario(name)
            answered = self.answered_cards()
            if answered:
                self.fail(f"a card was answered (a tool result reached the model): {answered!r}")
                break
        # ------------------------------------------------------- after the random phase
        await self.quit_app()
        files = sorted(p.name for p in self.workspace.iterdir())
        if files:
            self.fail(f"the workspace has files a card would have allowed: {files!r}")
        clipboard = self.work / "data" / "instance-ai" / "clipboard.txt"
        if clipboard.exists():
            self.fail(f"a copy was made: {clipboard}")
        threads, _grants = await self.check_store(grants_expected=False)
        if len(threads) < self.first_turns():
            self.fail(f"threads deleted: {self.first_turns()} were started, {len(threads)} are left")
        random_phase = {"threads": len(threads), "first_turns": self.first_turns(),
                        "cards_raised": dict(self.model.cards), "answered": self.answered_cards()}
        # ------------------------------------------------------- deliberate answers work
        deliberate = await self.deliberate()
        summary = {
            "size": f"{self.tmux.width}x{self.tmux.height}", "seconds": round(args.duration),
            "sentences": self.stats.sentences, "characters": self.stats.characters,
            "cards_seen": self.stats.cards_seen, "requests": len(self.server.requests) if self.server else 0,
            "scenarios": self.stats.by_scenario, "random_phase": random_phase, "deliberate": deliberate,
            "failures": len(self.stats.failures),
        }
        print(json.dumps(summary, indent=None if args.json else 2))
        if self.stats.failures:
            log(f"{len(self.stats.failures)} FAILURE(S); work dir kept: {self.work}"
                + (f" (the app's terminal: tmux -S {self.tmux.socket} attach)" if args.stop_on_failure else ""))
            return 1
        await self.tmux.stop()  # (its socket is in the work dir)
        shutil.rmtree(self.work, ignore_errors=True)
        log("OK: no card answered, no grant, no thread deleted or renamed, no block action, every sentence arrived")
        return 0

    async def deliberate(self) -> dict[str, Any]:
        """Ctrl+G then y writes the file; Ctrl+G, a, Enter grants always allow."""
        await self.start_app(ctrl_n_at_first_frame=True)
        await self.wait_ready()
        before_tools = len(self.answered_cards())
        self.model.forced = "write-file"
        await self.type("please write the notes")
        await self.send_typed("please write the notes", "deliberate")
        approved = False
        if await self.wait_card():
            await self.tmux.keys("C-g")
            if await self.poll_screen(lambda screen: "keys: card" in screen):
                await asyncio.sleep(0.6)  # past the card's grace period
                await self.tmux.keys("y")
                await poll(lambda: len(self.answered_cards()) > before_tools, 15, 0.1)
            approved = len(self.answered_cards()) > before_tools and any(self.workspace.iterdir())
        if not approved:
            self.fail(f"Ctrl+G then y did not approve the write\n{await self.tmux.screen()}")
        await self.wait_idle()
        await self.poll_screen(lambda screen: "keys: prompt" in screen)
        before_tools = len(self.answered_cards())
        await self.type("now write the todo list")
        await self.send_typed("now write the todo list", "deliberate")
        granted_keys = False
        if await self.wait_card():
            await self.tmux.keys("C-g")
            if await self.poll_screen(lambda screen: "keys: card" in screen):
                await asyncio.sleep(0.6)
                await self.tmux.keys("a")
                granted_keys = await self.poll_screen(
                    lambda screen: "Always allow?" in screen and "Enter grant it" in screen)
                await asyncio.sleep(0.5)
                if len(self.answered_cards()) > before_tools:
                    self.fail("the first key of always allow answered the card")
                await self.tmux.keys("Enter")
                await poll(lambda: len(self.answered_cards()) > before_tools, 15, 0.1)
        self.model.forced = None
        await self.wait_idle()
        await self.quit_app()
        _threads, grants = await self.check_store(grants_expected=True)
        granted = any("write-file" in g for g in grants.values())
        if not (granted_keys and granted):
            self.fail(f"Ctrl+G, a, Enter did not grant always allow (asked: {granted_keys}, grants: {grants!r})")
        return {"ctrl_g_y_approved": approved, "always_allow_asked_then_granted": granted_keys and granted}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--duration", type=float, default=300.0, help="seconds of random typing (default 300)")
    parser.add_argument("--size", default="160x48", help="the terminal's size, e.g. 80x24 (default 160x48)")
    parser.add_argument("--seed", type=int, default=None, help="random seed (default: from the clock)")
    parser.add_argument("--json", action="store_true", help="the summary on one line")
    parser.add_argument("--stop-on-failure", action="store_true", help="stop at the first failure (tmux kept)")
    parser.add_argument("--scenarios", default=",".join(SCENARIOS),
                        help="comma-separated scenarios to choose from (default: all), e.g. start-ctrl-n")
    args = parser.parse_args(argv)
    if args.seed is None:
        args.seed = int(time.time())
    return asyncio.run(TypingTest(args).run())


if __name__ == "__main__":
    sys.exit(main())
