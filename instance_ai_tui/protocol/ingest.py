"""The one way into the reducer: typed stream items, handed over a batch at a time.

What a client reads (a page of our log, one piece received from a server, one publish of the
in-process bus) becomes one ``Batch`` of typed items, and ``Conversation.fold`` folds it::

    bytes / stored JSON / live models --client--> Batch[StreamItem | DeltaRun] --fold--> Conversation

* ``StreamItem(id, event)``: one event model (``protocol.events``) or one ``run-sync`` frame
  (``RunSyncPayload``), ``id`` its id in the thread's log or ``None``;
* ``DeltaRun``: a run of text (or reasoning) deltas of one run, agent and response, the bulk of
  every stream, typed without a pydantic model per delta (``protocol.delta_runs``; a single delta
  is a run of one). It folds into the same tree as its deltas one by one.

``decode`` turns one event's JSON into its item, ``decode_lines`` a page of JSON lines (runs read
in bulk, ``delta_runs.line_runs``), and ``join`` makes neighbouring delta runs one. A ``Batch``
also says how much was still queued at its source when it was read (``queued``): the app's
projection tells a flood by it (what is waiting at a tick), never by the rate things arrive at.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from .delta_runs import DeltaRun, line_runs
from .hot_events import is_plain_hot_event, loads

if TYPE_CHECKING:
    from .events import Event
    from .tree import RunSyncPayload

__all__ = ["Batch", "DeltaRun", "Item", "Joiner", "Page", "StreamItem", "decode", "decode_lines", "events_of", "join"]

class StreamItem:
    """One event of a thread's stream, typed: built from an event model or a ``run-sync`` frame's
    payload (``StreamItem(id, model)``), it holds it as ``event`` or as ``run_sync`` (exactly one
    is set); ``id`` is the event's id in the thread's log, or ``None`` for frames that carry none
    (n8n's deltas and control frames). Immutable by convention."""

    __slots__ = ("event", "id", "run_sync")

    #: the events of the stream it stands for (a ``DeltaRun`` may stand for many)
    count = 1

    def __init__(self, id: int | None, event: Event | RunSyncPayload) -> None:
        self.id = id
        if type(event).__name__ == "RunSyncPayload":
            self.event: Event | None = None
            self.run_sync: RunSyncPayload | None = event  # type: ignore[assignment]
        else:
            self.event = event  # type: ignore[assignment]
            self.run_sync = None

    @property
    def model(self) -> Event | RunSyncPayload:
        """What it holds: the event, or the run-sync payload."""
        return self.event if self.event is not None else self.run_sync  # type: ignore[return-value]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, StreamItem):
            return NotImplemented
        return (self.id, self.event, self.run_sync) == (other.id, other.event, other.run_sync)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"StreamItem(id={self.id!r}, {'event' if self.event is not None else 'run_sync'}={self.model!r})"


#: what a batch holds, and ``Conversation.fold`` takes
Item = StreamItem | DeltaRun


class Batch:
    """The items a client read together (a page of the log, a piece received, one publish), in
    order; ``count``: the events they stand for; ``queued``: how many events were still waiting
    at the source when it was read (rows of the log after the page, frames received and not yet
    read: an estimate from the bytes), 0 when the source had nothing more ready."""

    __slots__ = ("count", "items", "queued")

    def __init__(self, items: list[Item], queued: int = 0) -> None:
        self.items = items
        self.count = sum([item.count for item in items]) if len(items) != 1 else items[0].count
        self.queued = queued

    def __iter__(self) -> Any:
        return iter(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def __repr__(self) -> str:
        return f"Batch({len(self.items)} items, {self.count} events, queued {self.queued})"


class Joiner:
    """Builds the items of a batch in order, joining neighbouring deltas as they come (what
    ``join`` of their ``decode``s gives, without a run made for each delta: a flood's deltas are
    taken a few hundred nanoseconds each)."""

    __slots__ = ("_ids", "_key", "_last", "_texts", "items")

    def __init__(self) -> None:
        self.items: list[Item] = []
        self._key: tuple[str, str, str, str | None] | None = None
        self._ids: list[int] | None = None
        self._texts: list[str] = []
        self._last: int | None = None

    def delta(self, event_id: int | None, kind: str, run_id: str, agent_id: str, response_id: str | None,
              text: str) -> None:
        """One text or reasoning delta (values ``is_plain_hot_event`` accepted)."""
        key = (kind, run_id, agent_id, response_id)
        if key == self._key:
            last = self._last
            if event_id is None:
                if last is None:
                    self._texts.append(text)
                    return
            elif last is not None and event_id > last:
                self._texts.append(text)
                self._ids.append(event_id)  # type: ignore[union-attr]
                self._last = event_id
                return
        self._flush()
        self._key = key
        self._texts = [text]
        self._ids = None if event_id is None else [event_id]
        self._last = event_id

    def add(self, item: Item) -> None:
        """Any other item (a run read in bulk, an event model), in its place."""
        if self._key is not None:
            self._flush()
        self.items.append(item)

    def json(self, event_id: int | None, data: Any) -> None:
        """One event given as JSON (``decode``). Raises ``EventParseError`` for what is not one."""
        if type(data) is str:
            try:
                data = loads(data)
            except ValueError:
                pass  # (``decode`` says what is wrong)
            except RecursionError:
                from .events import EventParseError

                raise EventParseError("nested too deeply") from None
        if type(data) is dict:
            kind = data.get("type")
            if kind == "text-delta" or kind == "reasoning-delta":
                size = len(data)
                payload = data.get("payload")
                if (size == 4 or size == 5) and type(payload) is dict and len(payload) == 1:
                    # the usual delta, exactly: type, runId, agentId, payload {text} (and a responseId
                    # string); what ``is_plain_hot_event`` accepts, checked here without its call
                    text = payload.get("text")
                    run_id = data.get("runId")
                    agent_id = data.get("agentId")
                    rid = data.get("responseId")
                    if (type(text) is str and type(run_id) is str and type(agent_id) is str
                            and (size == 4 or type(rid) is str)):
                        if (kind, run_id, agent_id, rid) == self._key:
                            last = self._last
                            if event_id is None:
                                if last is None:
                                    self._texts.append(text)
                                    return
                            elif last is not None and event_id > last:
                                self._texts.append(text)
                                self._ids.append(event_id)  # type: ignore[union-attr]
                                self._last = event_id
                                return
                        self.delta(event_id, kind, run_id, agent_id, rid, text)
                        return
                if is_plain_hot_event(data):
                    self.delta(event_id, kind, data.get("runId", ""), data.get("agentId", ""),
                               data.get("responseId"), data["payload"].get("text", ""))
                    return
        self.add(decode(event_id, data))

    def _flush(self) -> None:
        key = self._key
        if key is not None:
            self.items.append(DeltaRun(key[0], key[1], key[2], key[3], self._ids, texts=self._texts))
            self._key = None

    def done(self) -> list[Item]:
        """The items built (the builder starts again empty)."""
        self._flush()
        items, self.items = self.items, []
        return items


class Page(list[Any]):
    """A list of what a source read together (the in-process bus's stored events: a page of the
    log, a live publish) with ``queued``: how many events of the thread waited behind it when it
    was read (rows of the log after the page, events buffered behind a live publish). A client
    hands it on as its ``Batch.queued``."""

    queued: int = 0

    def __init__(self, events: Iterable[Any] = (), queued: int = 0) -> None:
        super().__init__(events)
        self.queued = queued


def decode(event_id: int | None, data: Any) -> Item:
    """The item of one event given as JSON (its text, or the decoded object): a text or reasoning
    delta in the plain form (``hot_events.is_plain_hot_event``: exactly what ``parse_event``
    accepts, with the same values) as a ``DeltaRun`` of one, without a model; a ``run-sync`` frame
    (``{"type": "run-sync", "payload": …}``) as its payload; anything else parsed by
    ``parse_event``. Raises ``EventParseError`` for what is not an event."""
    if type(data) is str:
        try:
            data = loads(data)
        except ValueError:
            pass  # (``parse_event`` says what is wrong)
        except RecursionError:
            from .events import EventParseError

            raise EventParseError("nested too deeply") from None
    if is_plain_hot_event(data):
        kind = data["type"]
        if kind != "status":
            return DeltaRun.one(event_id, kind, data.get("runId", ""), data.get("agentId", ""), data.get("responseId"),
                                data["payload"].get("text", ""))
    elif type(data) is dict and data.get("type") == "run-sync":
        return StreamItem(event_id, _run_sync(data.get("payload", data)))
    from .events import parse_event

    return StreamItem(event_id, parse_event(data))


def _run_sync(data: Any) -> RunSyncPayload:
    from pydantic import ValidationError

    from .events import EventParseError, first_error
    from .tree import RunSyncPayload

    try:
        return RunSyncPayload.model_validate(data)
    except ValidationError as exc:
        raise EventParseError(f"invalid run-sync frame: {first_error(exc)}") from None


def join(items: Iterable[Item]) -> list[Item]:
    """``items`` with each stretch of delta runs that continue one another (``DeltaRun.joins``:
    one type, run, agent and response, ids going up) made one run; the rest as it is. The runs
    are joined in place: hand over items nobody else holds."""
    out: list[Item] = []
    last: DeltaRun | None = None
    for item in items:
        if type(item) is DeltaRun:
            if last is not None and last.joins(item):
                last.extend(item)
                continue
            last = item
        else:
            last = None
        out.append(item)
    return out


def events_of(item: Item) -> list[StreamItem]:
    """``item`` as event models, one item each (a run of deltas taken apart: for a reader that
    shows or prints each event, not for the fold)."""
    if type(item) is not DeltaRun:
        return [item]  # type: ignore[list-item]
    from .events import parse_event

    ids = item.ids
    return [StreamItem(ids[index] if ids is not None else None, parse_event(item.wire(index)))
            for index in range(item.count)]


def decode_lines(ids: Sequence[int] | None, lines: Sequence[str],
                 on_error: Callable[[int | None, str, Exception], None]) -> list[Item]:
    """The items of JSON lines (one event each, as our log keeps them; ``ids`` theirs, going up, or
    ``None``): runs of deltas in our log's form read in bulk (``delta_runs.line_runs``), the rest
    by ``decode``, neighbouring runs joined. A line that is not an event is skipped, told to
    ``on_error(id, line, error)``."""
    from .events import EventParseError

    joiner = Joiner()
    taken = 0
    size = len(lines)

    def each(start: int, stop: int) -> None:
        take = joiner.json
        for index in range(start, stop):
            event_id = ids[index] if ids is not None else None
            try:
                take(event_id, lines[index])
            except EventParseError as exc:
                on_error(event_id, lines[index], exc)

    for start, stop, run in (line_runs(ids, lines) if size > 1 else ()):
        each(taken, start)
        joiner.add(run)
        taken = stop
    each(taken, size)
    return joiner.done()
