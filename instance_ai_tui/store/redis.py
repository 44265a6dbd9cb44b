"""``RedisStore``: the ``Store`` protocol on Redis, for several server processes behind one URL.

Key layout (``prefix`` defaults to ``iai:``; ``{t}`` = thread id, ``{r}`` = run id):

==============================  ======  ======================================================
``threads``                     ZSET    thread ids scored by ``updated_at`` (newest first)
``thread:{t}``                  HASH    ``title``, ``metadata`` (JSON), ``created_at``, ``updated_at``
``events:{t}``                  STREAM  the durable event log; entry id ``0-<n>``, fields ``t r j``
``seq:{t}``                     STRING  last event id of the thread (atomic counter)
``msgs:{t}`` / ``msgseq:{t}``   HASH / STRING  message JSON by id / the message order counter
``ckpt:{r}``, ``ckpts``         HASH / SET     one checkpoint / all checkpoint run ids
``run:{r}``, ``runs:{t}``       STRING / SET   one run record / the thread's run ids
``snap:{t}``                    HASH    agent-tree snapshot JSON by run id
``settings:{scope}``            HASH    JSON values
==============================  ======  ======================================================

Event ids come from ``INCRBY`` inside the same Lua script that ``XADD``s the events, so they
are gap-free and ordered across processes. Replay reads the stream with ``XRANGE`` in
batches, so a long log is never loaded whole.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import AsyncIterator, Sequence
from datetime import UTC, datetime
from typing import Any

from .base import (
    CheckpointRecord,
    MessageRecord,
    NewEvent,
    RunRecord,
    StoredEvent,
    ThreadNotFound,
    ThreadRecord,
)

_APPEND = """
local n = (#ARGV - 1) / 3
local last = redis.call('INCRBY', KEYS[2], n)
local first = last - n + 1
local frame = {}
for i = 0, n - 1 do
  local id = string.format('%d', first + i)
  local t, r, j = ARGV[i*3+2], ARGV[i*3+3], ARGV[i*3+4]
  redis.call('XADD', KEYS[1], '0-' .. id, 't', t, 'r', r, 'j', j)
  if ARGV[1] ~= '' then frame[i + 1] = id .. '\t' .. t .. '\t' .. r .. '\t' .. j end
end
if ARGV[1] ~= '' then redis.call('PUBLISH', ARGV[1], table.concat(frame, '\0')) end
return first
"""

#: A batch of the log as ONE string of records ``id TAB type TAB runId TAB json`` joined by NUL:
#: one bulk reply instead of nine per entry (redis-py's RESP parser is the cost of a replay).
_READ = """
local entries
if ARGV[2] == '' then
  entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+')
else
  entries = redis.call('XRANGE', KEYS[1], ARGV[1], '+', 'COUNT', ARGV[2])
end
local out = {}
for i = 1, #entries do
  local f = entries[i][2]
  local t, r, j = '', '', '{}'
  for k = 1, #f, 2 do
    if f[k] == 't' then t = f[k + 1] elseif f[k] == 'r' then r = f[k + 1] elseif f[k] == 'j' then j = f[k + 1] end
  end
  out[i] = string.sub(entries[i][1], 3) .. '\t' .. t .. '\t' .. r .. '\t' .. j
end
return table.concat(out, '\0')
"""

_UPSERT_MESSAGE = """
local existing = redis.call('HGET', KEYS[1], ARGV[1])
local seq
if existing then
  seq = tonumber(cjson.decode(existing)['seq'])
else
  seq = redis.call('INCR', KEYS[2])
end
redis.call('HSET', KEYS[1], ARGV[1], '{"seq":' .. string.format('%d', seq) .. ',' .. string.sub(ARGV[2], 2))
return seq
"""

_CAS_CHECKPOINT = """
local current = redis.call('GET', KEYS[1])
if not current then return false end
if tonumber(cjson.decode(current)['version']) ~= tonumber(ARGV[1]) then return false end
redis.call('SET', KEYS[1], ARGV[2])
return ARGV[2]
"""

#: The scripts never re-encode stored JSON with Lua's cjson: it turns ``[]`` into ``{}`` and
#: rounds numbers to 14 digits. They only read a counter from it; Python writes the JSON.


def _now() -> datetime:
    return datetime.now(UTC)


def _clean(value: str) -> str:
    """A type or run id as a record field: no NUL, no TAB."""
    return value.replace("\x00", "").replace("\t", " ")


def _clean_json(text: str) -> str:
    # a raw NUL is never valid JSON; escaped it means the same and keeps records NUL-separated
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


def decode_records(thread_id: str, blob: str | bytes) -> list[StoredEvent]:
    """Events from ``id TAB type TAB runId TAB json`` records joined by NUL (log reads, live frames)."""
    if isinstance(blob, bytes):
        blob = blob.decode()
    if not blob:
        return []
    out: list[StoredEvent] = []
    for record in blob.split("\x00"):
        parts = record.split("\t", 3)
        if len(parts) == 4 and parts[0].isdigit():
            out.append(
                StoredEvent(thread_id=thread_id, id=int(parts[0]), type=parts[1], run_id=parts[2], json=parts[3])
            )
    return out


class RedisStore:
    """Everything the app persists, in one Redis database shared by every server process."""

    def __init__(self, redis: Any, prefix: str = "iai:") -> None:
        self._r = redis
        self._p = prefix
        self._append = redis.register_script(_APPEND)
        self._read = redis.register_script(_READ)
        self._upsert_message = redis.register_script(_UPSERT_MESSAGE)
        self._cas = redis.register_script(_CAS_CHECKPOINT)

    @classmethod
    def from_url(cls, url: str, prefix: str = "iai:") -> RedisStore:
        import redis.asyncio as aioredis

        # bounded waits: a stalled or unreachable Redis is an error (a 503 to clients) within
        # seconds, not a request that hangs for as long as the outage lasts
        client = aioredis.from_url(url, decode_responses=True, socket_connect_timeout=3.0, socket_timeout=10.0,
                                   health_check_interval=15)
        return cls(client, prefix=prefix)

    @property
    def redis(self) -> Any:
        return self._r

    def key(self, *parts: str) -> str:
        return self._p + ":".join(parts)

    async def open(self) -> None:
        await self._r.ping()

    async def close(self) -> None:
        await self._r.aclose()

    # ----------------------------------------------------------------- threads

    def _thread_from(self, thread_id: str, data: dict[str, str]) -> ThreadRecord:
        return ThreadRecord(
            id=thread_id,
            title=data.get("title", ""),
            metadata=json.loads(data.get("metadata") or "{}"),
            created_at=datetime.fromisoformat(data["created_at"]),
            updated_at=datetime.fromisoformat(data["updated_at"]),
        )

    async def create_thread(self, thread_id: str, title: str = "", metadata: dict[str, Any] | None = None) -> ThreadRecord:
        now = _now()
        fields = {
            "title": title,
            "metadata": json.dumps(metadata or {}),
            "created_at": now.isoformat(),
            "updated_at": now.isoformat(),
        }
        key = self.key("thread", thread_id)
        # HSETNX on created_at makes a concurrent second create a no-op.
        if await self._r.hsetnx(key, "created_at", fields["created_at"]):
            pipe = self._r.pipeline(transaction=True)
            pipe.hset(key, mapping={k: v for k, v in fields.items() if k != "created_at"})
            pipe.zadd(self.key("threads"), {thread_id: now.timestamp()})
            await pipe.execute()
        record = await self.get_thread(thread_id)
        assert record is not None
        return record

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        data = await self._r.hgetall(self.key("thread", thread_id))
        if not data or "updated_at" not in data:
            return None
        return self._thread_from(thread_id, data)

    async def list_threads(self, search: str | None = None, limit: int | None = None) -> list[ThreadRecord]:
        ids = await self._r.zrevrange(self.key("threads"), 0, -1)
        pipe = self._r.pipeline(transaction=False)
        for thread_id in ids:
            pipe.hgetall(self.key("thread", thread_id))
        rows = await pipe.execute()
        needle = search.casefold() if search else None
        words = _search_words(search) if search else []
        out: list[ThreadRecord] = []
        for thread_id, data in zip(ids, rows, strict=False):
            if not data or "updated_at" not in data:
                continue
            record = self._thread_from(thread_id, data)
            if needle and needle not in record.title.casefold():
                # as SQLite's full-text index: every word, as a word prefix, in one message
                if not words or not await self._messages_match(thread_id, words):
                    continue
            out.append(record)
            if limit is not None and len(out) >= limit:
                break
        return out

    async def _messages_match(self, thread_id: str, words: list[str]) -> bool:
        for row in await self._r.hvals(self.key("msgs", thread_id)):
            message = MessageRecord.model_validate_json(row)
            if message.role in ("user", "assistant") and isinstance(message.content, str):
                found = set(re.findall(r"\w+", _fold(message.content)))
                if all(any(token.startswith(word) for token in found) for word in words):
                    return True
        return False

    async def update_thread(
        self, thread_id: str, title: str | None = None, metadata: dict[str, Any] | None = None
    ) -> ThreadRecord:
        current = await self.get_thread(thread_id)
        if current is None:
            raise ThreadNotFound(thread_id)
        now = _now()
        fields: dict[str, str] = {"updated_at": now.isoformat()}
        if title is not None:
            fields["title"] = title
        if metadata is not None:
            fields["metadata"] = json.dumps({**current.metadata, **metadata})
        pipe = self._r.pipeline(transaction=True)
        pipe.hset(self.key("thread", thread_id), mapping=fields)
        pipe.zadd(self.key("threads"), {thread_id: now.timestamp()})
        await pipe.execute()
        record = await self.get_thread(thread_id)
        assert record is not None
        return record

    async def delete_thread(self, thread_id: str) -> bool:
        run_ids = await self._r.smembers(self.key("runs", thread_id))
        pipe = self._r.pipeline(transaction=True)
        pipe.exists(self.key("thread", thread_id))
        for name in ("thread", "events", "seq", "msgs", "msgseq", "snap", "runs"):
            pipe.delete(self.key(name, thread_id))
        for run_id in run_ids:
            pipe.delete(self.key("run", run_id))
        pipe.zrem(self.key("threads"), thread_id)
        pipe.delete(self.key("settings", f"thread:{thread_id}"))
        results = await pipe.execute()
        checkpoints = await self.list_checkpoints(thread_id=thread_id)
        for record in checkpoints:
            await self.delete_checkpoint(record.run_id)
        return bool(results[0])

    # ----------------------------------------------------------------- events

    async def append_events(
        self, thread_id: str, events: Sequence[NewEvent], *, publish: str | None = None
    ) -> list[StoredEvent]:
        """Append to the log; with ``publish``, also announce the batch on that pub/sub channel
        (one message of records, see ``decode_records``) in the same atomic script."""
        if not events:
            return []
        cleaned = [(_clean(e.type), _clean(e.run_id), _clean_json(e.json)) for e in events]
        args: list[str] = [publish or ""]
        for fields in cleaned:
            args += fields
        first = int(await self._append(keys=[self.key("events", thread_id), self.key("seq", thread_id)], args=args))
        return [
            StoredEvent(thread_id, first + i, t, r, j, event.event)
            for i, ((t, r, j), event) in enumerate(zip(cleaned, events, strict=True))
        ]

    async def read_events(self, thread_id: str, after: int = 0, limit: int | None = None) -> list[StoredEvent]:
        if limit is None:  # page, so one script never builds a huge reply
            out: list[StoredEvent] = []
            async for event in self.iter_events(thread_id, after=after, batch=5000):
                out.append(event)
            return out
        if limit <= 0:
            return []
        blob = await self._read(keys=[self.key("events", thread_id)], args=[f"(0-{after}", int(limit)])
        return decode_records(thread_id, blob)

    async def iter_events(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[StoredEvent]:
        async for page in self.iter_event_pages(thread_id, after, batch):
            for event in page:
                yield event

    async def iter_event_pages(self, thread_id: str, after: int = 0, batch: int = 1000) -> AsyncIterator[list[StoredEvent]]:
        """``iter_events`` a page at a time (never empty): what one read gave."""
        cursor = after
        while True:
            chunk = await self.read_events(thread_id, after=cursor, limit=max(1, batch))
            if chunk:
                yield chunk
            if len(chunk) < max(1, batch):
                return
            cursor = chunk[-1].id

    async def coalesce_run(self, thread_id: str, run_id: str, after: int = 0) -> int:
        """Not done on Redis: the log is a stream, whose entries cannot be rewritten in place (an entry
        cannot be replaced under its id); the deltas stay, which every reader handles."""
        return 0

    async def last_event_id(self, thread_id: str) -> int:
        value = await self._r.get(self.key("seq", thread_id))
        return int(value or 0)

    # ----------------------------------------------------------------- messages

    async def upsert_messages(self, thread_id: str, messages: Sequence[MessageRecord]) -> None:
        for message in messages:
            await self._upsert_message(
                keys=[self.key("msgs", thread_id), self.key("msgseq", thread_id)],
                args=[message.id, message.model_dump_json(exclude={"seq"})],
            )

    async def list_messages(self, thread_id: str, last: int | None = None) -> list[MessageRecord]:
        # one hash per thread: read whole and cut (Redis keeps no order index of messages)
        rows = await self._r.hvals(self.key("msgs", thread_id))
        records = [MessageRecord.model_validate_json(row) for row in rows]
        records.sort(key=lambda m: m.seq)
        if last is None:
            return records
        return records[-last:] if last > 0 else []

    # ----------------------------------------------------------------- checkpoints

    async def save_checkpoint(self, record: CheckpointRecord) -> CheckpointRecord:
        current = await self.get_checkpoint(record.run_id)
        version = (current.version + 1) if current else max(record.version, 1)
        saved = record.model_copy(update={"version": version, "updated_at": _now()})
        pipe = self._r.pipeline(transaction=True)
        pipe.set(self.key("ckpt", record.run_id), saved.model_dump_json())
        pipe.sadd(self.key("ckpts"), record.run_id)
        await pipe.execute()
        return saved

    async def get_checkpoint(self, run_id: str) -> CheckpointRecord | None:
        raw = await self._r.get(self.key("ckpt", run_id))
        return CheckpointRecord.model_validate_json(raw) if raw else None

    async def compare_and_set_checkpoint(
        self, run_id: str, expected_version: int, status: str, state: dict[str, Any] | None = None
    ) -> CheckpointRecord | None:
        current = await self.get_checkpoint(run_id)
        if current is None or current.version != expected_version:
            return None
        update: dict[str, Any] = {"version": expected_version + 1, "status": status, "updated_at": _now()}
        if state is not None:
            update["state"] = state
        updated = current.model_copy(update=update)
        raw = await self._cas(keys=[self.key("ckpt", run_id)], args=[expected_version, updated.model_dump_json()])
        return CheckpointRecord.model_validate_json(raw) if raw else None

    async def list_checkpoints(self, status: str | None = None, thread_id: str | None = None) -> list[CheckpointRecord]:
        run_ids = sorted(await self._r.smembers(self.key("ckpts")))
        if not run_ids:
            return []
        raws = await self._r.mget([self.key("ckpt", r) for r in run_ids])
        out = []
        for raw in raws:
            if not raw:
                continue
            record = CheckpointRecord.model_validate_json(raw)
            if status is not None and record.status != status:
                continue
            if thread_id is not None and record.thread_id != thread_id:
                continue
            out.append(record)
        return out

    async def delete_checkpoint(self, run_id: str) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.delete(self.key("ckpt", run_id))
        pipe.srem(self.key("ckpts"), run_id)
        await pipe.execute()

    async def sweep_checkpoints(self, now: datetime) -> int:
        swept = 0
        for record in await self.list_checkpoints():
            if record.expires_at is not None and record.expires_at <= now and record.status != "expired":
                if await self.compare_and_set_checkpoint(record.run_id, record.version, "expired") is not None:
                    swept += 1
        return swept

    # ----------------------------------------------------------------- runs

    async def upsert_run(self, record: RunRecord) -> None:
        pipe = self._r.pipeline(transaction=True)
        pipe.set(self.key("run", record.run_id), record.model_dump_json())
        pipe.sadd(self.key("runs", record.thread_id), record.run_id)
        await pipe.execute()

    async def get_run(self, run_id: str) -> RunRecord | None:
        raw = await self._r.get(self.key("run", run_id))
        return RunRecord.model_validate_json(raw) if raw else None

    async def list_runs(self, thread_id: str | None = None, status: Sequence[str] | None = None, *,
                        limit: int | None = None, skip_newest: int = 0) -> list[RunRecord]:
        if thread_id is not None:
            run_ids = list(await self._r.smembers(self.key("runs", thread_id)))
        else:
            run_ids = []
            async for key in self._r.scan_iter(match=self.key("run", "*"), count=500):
                run_ids.append(key[len(self.key("run", "")) :])
        if not run_ids:
            return []
        raws = await self._r.mget([self.key("run", r) for r in run_ids])
        records = [RunRecord.model_validate_json(raw) for raw in raws if raw]
        if status is not None:
            wanted = set(status)
            records = [r for r in records if r.status in wanted]
        records.sort(key=lambda r: r.started_at)
        if limit is not None:  # (the records of a thread are one set here: read whole, then cut)
            end = max(0, len(records) - max(0, skip_newest))
            return records[max(0, end - max(0, limit)):end]
        return records

    # ----------------------------------------------------------------- snapshots

    async def save_snapshot(self, thread_id: str, run_id: str, tree: dict[str, Any]) -> None:
        await self._r.hset(self.key("snap", thread_id), run_id, json.dumps(tree))

    async def get_snapshots(
        self, thread_id: str, run_ids: Sequence[str] | None = None
    ) -> dict[str, dict[str, Any]]:
        if run_ids is None:
            rows = await self._r.hgetall(self.key("snap", thread_id))
            return {run_id: json.loads(raw) for run_id, raw in rows.items()}
        wanted = list(run_ids)
        if not wanted:
            return {}
        raws = await self._r.hmget(self.key("snap", thread_id), wanted)
        return {run_id: json.loads(raw) for run_id, raw in zip(wanted, raws, strict=True) if raw is not None}

    # ----------------------------------------------------------------- settings

    async def get_setting(self, scope: str, key: str) -> Any:
        raw = await self._r.hget(self.key("settings", scope), key)
        return json.loads(raw) if raw is not None else None

    async def set_setting(self, scope: str, key: str, value: Any) -> None:
        await self._r.hset(self.key("settings", scope), key, json.dumps(value))


def _fold(text: str) -> str:
    """Case and diacritics folded, as SQLite's ``unicode61 remove_diacritics 2`` tokenizer."""
    decomposed = unicodedata.normalize("NFKD", text.casefold())
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def _search_words(search: str) -> list[str]:
    return re.findall(r"\w+", _fold(search))
