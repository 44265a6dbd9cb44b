"""Runs of streamed deltas read in bulk: a flood of our own server's SSE frames decoded in C.

A replayed or bursting stream is almost all text and reasoning deltas, one frame each, and a
client that decodes them one by one spends a few microseconds of Python per delta (the frame,
its id, ``json`` and the exact check of ``hot_events``). Our server writes every delta in one
form (``WireModel.to_json``: ``id: N``, then ``data: {"type":…,"runId":…,"agentId":…,
"responseId":…,"payload":{"text":…}}``, then a blank line). ``RunSSEParser`` finds runs of
such frames of one type, run, agent and response with regular expressions over the whole text
received, and hands each run over as one ``DeltaRun``: its ids and its texts as the JSON wrote
them, decoded only when asked, all at once.

Never wider than the one-by-one path: a run is only what that path would have read as the same
plain hot events (``hot_events.is_plain_hot_event`` accepts each, ``parse_event`` too): the
envelope's strings hold no escape, quote or control character, the text is a valid JSON string
body, ids go up by one. Anything else (another key order, an escape in an id, ``ts``, CRLF line
ends, an ``event:`` line, a frame over the parser's limit) is left to the ordinary frames.
This module imports nothing of ours but ``sse``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from json.decoder import scanstring  # type: ignore[attr-defined]  # (the C scanner of json)
from typing import Any, cast

from .sse import SSEFrame, SSEParser

__all__ = ["DeltaRun", "RunSSEParser", "decode_texts", "line_runs"]

#: a JSON string body without escapes, quotes or control characters (the envelope's values)
_PLAIN = r'[^"\\\x00-\x1f]*'
#: any valid JSON string body (escapes complete, no raw control character)
_BODY = _PLAIN + r'(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})' + _PLAIN + r')*'
#: two or more consecutive frames of one delta type, run, agent and response, from a frame start
#: the response id, when there is one (a group that always matches: its backreference then too)
_RID = r'((?:,"responseId":"' + _PLAIN + r'")?)'
_RUN = re.compile(
    r'(?:^|(?<=\n\n))id: ([1-9][0-9]{0,17})\ndata: \{"type":"(text-delta|reasoning-delta)","runId":"(' + _PLAIN
    + r')","agentId":"(' + _PLAIN + r')"' + _RID + r',"payload":\{"text":"' + _BODY
    + r'"\}\}\n\n'
    r'(?:id: [1-9][0-9]{0,17}\ndata: \{"type":"\2","runId":"\3","agentId":"\4"\5,'
    r'"payload":\{"text":"' + _BODY + r'"\}\}\n\n)+'
)
#: the same, as JSON lines (the event log's rows, a recording's lines, joined with line ends)
_LINE_RUN = re.compile(
    r'(?:^|(?<=\n))\{"type":"(text-delta|reasoning-delta)","runId":"(' + _PLAIN + r')","agentId":"(' + _PLAIN
    + r')"' + _RID + r',"payload":\{"text":"' + _BODY + r'"\}\}\n'
    r'(?:\{"type":"\1","runId":"\2","agentId":"\3"\4,"payload":\{"text":"' + _BODY + r'"\}\}\n)+'
)


def _rid(group: str) -> str | None:
    """The response id of ``_RID``'s group (``,"responseId":"x"``), or ``None`` (none written)."""
    return group[15:-1] if group else None
_LINE_TEXTS = re.compile(r'"payload":\{"text":"(' + _BODY + r')"\}\}\n')
_IDS = re.compile(r"id: ([0-9]+)\n")
_TEXTS = re.compile(r'"payload":\{"text":"(' + _BODY + r')"\}\}\n\n')
#: a surrogate escape: two of them split between deltas decode differently joined than apart
_SURROGATE = re.compile(r"\\u[dD][89abAB]")


def decode_texts(bodies: Sequence[str]) -> str:
    """The joined text of JSON string ``bodies`` (each valid on its own): what decoding each and
    joining gives, in one C call when that is provably the same (no surrogate escape)."""
    joined = "".join(bodies)
    if "\\" not in joined:
        return joined
    if _SURROGATE.search(joined) is None:
        return cast("str", scanstring(joined + '"', 0)[0])
    return "".join([scanstring(body + '"', 0)[0] for body in bodies])


class DeltaRun:
    """A run of one or more text (or reasoning) deltas of one run, agent and response, ids going
    up (or none of them has one): a typed event of the stream, folded as its deltas one by one
    would be (``RunReducer.apply``, ``Conversation.fold``).

    Its texts are kept as received: JSON string ``bodies`` read in bulk (decoded only when folded,
    all at once, ``rest``) or decoded ``texts`` (a delta decoded on its own, ``one``). ``ids`` is
    ``None`` when the deltas carry none (n8n's), else one id a delta, going up."""

    __slots__ = ("_first", "_rest", "agent_id", "bodies", "ids", "response_id", "run_id", "span", "texts", "type")

    def __init__(self, kind: str, run_id: str, agent_id: str, response_id: str | None, ids: list[int] | None,
                 bodies: list[str] | None = None, span: str = "", texts: list[str] | None = None) -> None:
        self.type = kind
        self.run_id = run_id
        self.agent_id = agent_id
        self.response_id = response_id
        self.ids = ids
        self.bodies = bodies
        self.texts = texts
        #: the frames' text as received (``frames()``; "" for a run read from the log or joined)
        self.span = span
        self._first: str | None = None
        self._rest: str | None = None

    @classmethod
    def one(cls, event_id: int | None, kind: str, run_id: str, agent_id: str, response_id: str | None,
            text: str) -> DeltaRun:
        """One delta, its text decoded."""
        return cls(kind, run_id, agent_id, response_id, None if event_id is None else [event_id], texts=[text])

    @property
    def id(self) -> int | None:
        """The last delta's id (what a stream's cursor moves to), or ``None``."""
        ids = self.ids
        return ids[-1] if ids else None

    @property
    def count(self) -> int:
        """How many deltas (events of the stream) this run stands for."""
        return len(self.texts if self.texts is not None else self.bodies or ())

    def __len__(self) -> int:
        return self.count

    @property
    def key(self) -> tuple[str, str, str, str | None]:
        return self.type, self.run_id, self.agent_id, self.response_id

    def all_texts(self) -> list[str]:
        """Each delta's text, decoded (one C call each for bodies: the slow way, for the rare fold
        that must take them one by one)."""
        if self.texts is None:
            self.texts = [scanstring(body + '"', 0)[0] for body in self.bodies or ()]
            self.bodies = None
        return self.texts

    def first(self) -> str:
        """The first delta's text."""
        if self._first is None:
            self._first = self.texts[0] if self.texts is not None else scanstring(self.bodies[0] + '"', 0)[0]  # type: ignore[index]
        return self._first

    def rest(self) -> str:
        """The joined text of every delta but the first (decoded in one C call when read in bulk)."""
        if self._rest is None:
            self._rest = "".join(self.texts[1:]) if self.texts is not None else decode_texts(self.bodies[1:])  # type: ignore[index]
        return self._rest

    def joined(self) -> str:
        """The joined text of every delta."""
        return self.first() + self.rest()

    def wire(self, index: int) -> dict[str, Any]:
        """Delta ``index`` as its decoded JSON (the dict ``json.loads`` gives for its frame, key
        order aside)."""
        data: dict[str, Any] = {"type": self.type, "runId": self.run_id, "agentId": self.agent_id,
                                "payload": {"text": self.all_texts()[index]}}
        if self.response_id is not None:
            data["responseId"] = self.response_id
        return data

    def after(self, cursor: int) -> DeltaRun:
        """The deltas with an id above ``cursor`` (a suffix: ids go up), as a run of their own."""
        ids = self.ids
        if ids is None or ids[0] > cursor:
            return self
        start = next((index for index, event_id in enumerate(ids) if event_id > cursor), len(ids))
        return self.tail(start)

    def tail(self, start: int) -> DeltaRun:
        """The deltas from ``start`` on, as a run of their own."""
        ids = self.ids[start:] if self.ids is not None else None
        if self.texts is not None:
            return DeltaRun(self.type, self.run_id, self.agent_id, self.response_id, ids, texts=self.texts[start:])
        return DeltaRun(self.type, self.run_id, self.agent_id, self.response_id, ids, self.bodies[start:])  # type: ignore[index]

    def joins(self, other: DeltaRun) -> bool:
        """Whether ``other`` continues this run: the same type, run, agent and response, and its
        ids going on up from this one's (or neither has ids)."""
        if self.key != other.key:
            return False
        if self.ids is None or other.ids is None:
            return self.ids is None and other.ids is None
        return other.ids[0] > self.ids[-1]

    def extend(self, other: DeltaRun) -> None:
        """Take ``other``'s deltas after this run's (``joins`` said it may), in place: its lists
        are this run's own (a run is built for one reader)."""
        if self.ids is not None and other.ids is not None:
            self.ids.extend(other.ids)
        if self.bodies is not None and other.bodies is not None:
            self.bodies.extend(other.bodies)
        else:
            self.all_texts().extend(other.all_texts())
        self.span = ""
        self._rest = None

    def frames(self) -> list[tuple[str, str]]:
        """Each frame's ``(id, data)`` as received: for a reader that must take them one by one."""
        out = []
        for block in self.span.split("\n\n"):
            if block:
                newline = block.index("\n")
                out.append((block[4:newline], block[newline + 7:]))
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, DeltaRun):
            return NotImplemented
        return (self.key, self.ids, self.all_texts()) == (other.key, other.ids, other.all_texts())

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        ids = f"ids {self.ids[0]}..{self.ids[-1]}" if self.ids else "no ids"
        return f"DeltaRun({self.type}, run={self.run_id!r}, agent={self.agent_id!r}, {self.count} deltas, {ids})"


def _run(match: re.Match[str]) -> DeltaRun | None:
    """The run of a match of ``_RUN``, or ``None`` when its ids do not go up by one."""
    span = match.group(0)
    ids = [int(raw) for raw in _IDS.findall(span)]
    first = ids[0]
    if ids != list(range(first, first + len(ids))):
        return None
    return DeltaRun(match.group(2), match.group(3), match.group(4), _rid(match.group(5)), ids, _TEXTS.findall(span),
                    span)


def line_runs(ids: Sequence[int] | None, lines: Sequence[str]) -> list[tuple[int, int, DeltaRun]]:
    """The runs among ``lines`` (one event's JSON each, as our log keeps it; ``ids`` theirs, going
    up, or ``None``: lines without ids): ``(start, end, run)`` for ``lines[start:end]``, in order.
    Lines with a line break of their own are not JSON our log writes: none is read in bulk then."""
    text = "\n".join(lines) + "\n"
    if text.count("\n") != len(lines):
        return []
    out: list[tuple[int, int, DeltaRun]] = []
    row = at = 0
    for match in _LINE_RUN.finditer(text):
        start, end = match.span()
        row += text.count("\n", at, start)
        size = text.count("\n", start, end)
        bodies = _LINE_TEXTS.findall(match.group(0))
        if len(bodies) == size:
            run = DeltaRun(match.group(1), match.group(2), match.group(3), _rid(match.group(4)),
                           None if ids is None else list(ids[row:row + size]), bodies)
            out.append((row, row + size, run))
        row += size
        at = end
    return out


class RunSSEParser(SSEParser):
    """An ``SSEParser`` whose ``feed`` also gives ``DeltaRun`` items: a run of our server's delta
    frames received together stands for its frames, in their place. ``last_event_id`` follows
    the run's last id. Other frames are what ``SSEParser`` gives (all of them without ``runs``)."""

    def __init__(self, *, runs: bool = True, **limits: Any) -> None:
        super().__init__(**limits)
        self.runs = runs

    def feed_runs(self, chunk: str | bytes | bytearray | memoryview) -> list[SSEFrame | DeltaRun]:
        return cast("list[SSEFrame | DeltaRun]", self.feed(chunk))

    def _frames(self, text: str, frames: list[SSEFrame]) -> None:
        if not self.runs or "\n\n" not in text:  # (one frame: nothing to join)
            super()._frames(text, frames)
            return
        text += "\n\n"  # (the blank line that ends the last frame)
        limit = self.max_frame_chars
        out = cast("list[SSEFrame | DeltaRun]", frames)
        at = 0
        for match in _RUN.finditer(text):
            start, end = match.span()
            if end - start > limit:
                continue  # (the ordinary frames keep each frame's limit)
            run = _run(match)
            if run is None or run.ids is None or run.bodies is None or len(run.bodies) != len(run.ids):
                continue
            if start > at:
                super()._frames(text[at:start - 2], frames)
            out.append(run)
            self.last_event_id = str(run.ids[-1])
            at = end
        if at < len(text):
            super()._frames(text[at:-2], frames)
