"""Conversation memory: thread history, working memory, titles and optional semantic recall.

``Memory`` is the interface the agent uses; ``StoreMemory`` implements it on a ``Store``:

* each turn's delta is upserted into the thread as ``MessageRecord`` rows (the full runtime
  ``Message`` lives in ``record.data``; ``record.content`` is its text content);
* working memory is a per-thread markdown text in the store's settings (scope ``thread:<id>``),
  shown to the model in the system prompt and replaced by the ``update_working_memory`` tool;
* a title is generated once, after the first substantial exchange, by one model call;
* semantic recall (optional, needs an ``Embedder``) embeds user/assistant text on save and adds
  the most similar older messages of the thread to the context.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from datetime import UTC
from typing import Any, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from ..store.base import MessageRecord, MessageStore, SettingsStore, ThreadStore
from .compaction import OBSERVATIONS, Observations
from .messages import Message
from .model import ModelAdapter, ModelRequest, answer_text
from .tools import Tool, ToolContext
from .usage import Usage

WORKING_MEMORY_TOOL = "update_working_memory"

#: thread setting (scope ``thread:<id>``): ids of runs the user rewound past (kept, not recalled)
SUPERSEDED_RUNS = "superseded_runs"



class MemoryStorage(ThreadStore, MessageStore, SettingsStore, Protocol):
    """What ``StoreMemory`` needs of a store: threads, their messages, small settings (the runtime's own
    declaration; ``store.sqlite.SqliteStore`` and ``store.redis.RedisStore`` implement it)."""

async def superseded_runs(store: SettingsStore, thread_id: str) -> set[str]:
    """Runs of ``thread_id`` the user rewound past: their messages stay stored but leave the context."""
    value = await store.get_setting(f"thread:{thread_id}", SUPERSEDED_RUNS)
    return {str(v) for v in value} if isinstance(value, list) else set()


async def mark_superseded(store: SettingsStore, thread_id: str, run_ids: Sequence[str]) -> None:
    known = await superseded_runs(store, thread_id)
    await store.set_setting(f"thread:{thread_id}", SUPERSEDED_RUNS, sorted(known | set(run_ids)))

DEFAULT_WORKING_MEMORY_TEMPLATE = """# User and task notes
- Name:
- Preferences:
- Current goal:
"""

WORKING_MEMORY_INSTRUCTIONS = (
    "## Working Memory\n"
    "Below is your working memory for this conversation: facts worth keeping across turns (who the user is, "
    "their preferences, the current goal). When you learn something that should be remembered, call "
    f"`{WORKING_MEMORY_TOOL}` with the complete new text (it replaces the old one).\n"
    "<working_memory>\n{content}\n</working_memory>"
)


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (all of one dimension)."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]: ...


class HashingEmbedder:
    """A deterministic, offline embedder: hashed bag of lower-cased words, L2-normalised.

    Texts that share words get similar vectors. Good enough for tests and small local setups."""

    def __init__(self, dimensions: int = 256) -> None:
        self.dimensions = dimensions

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [self._one(t) for t in texts]

    def _one(self, text: str) -> list[float]:
        vec = [0.0] * self.dimensions
        for word in re.findall(r"[a-z0-9]+", text.lower()):
            digest = hashlib.blake2b(word.encode(), digest_size=8).digest()
            vec[int.from_bytes(digest[:4], "little") % self.dimensions] += 1.0 if digest[4] & 1 else -1.0
        norm = math.sqrt(sum(v * v for v in vec)) or 1.0
        return [v / norm for v in vec]


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    dot = sum(x * y for x, y in zip(a, b, strict=False))
    na = math.sqrt(sum(x * x for x in a)) or 1.0
    nb = math.sqrt(sum(y * y for y in b)) or 1.0
    return dot / (na * nb)


@runtime_checkable
class Memory(Protocol):
    #: add the ``update_working_memory`` tool and show working memory in the system prompt
    working_memory: bool
    #: generate a thread title after the first substantial exchange
    title_generation: bool

    async def load_history(self, thread_id: str) -> list[Message]: ...
    async def save_messages(self, thread_id: str, messages: Sequence[Message], *, run_id: str | None = None) -> None: ...
    async def get_working_memory(self, thread_id: str) -> str | None: ...
    async def save_working_memory(self, thread_id: str, content: str) -> None: ...
    def working_memory_block(self, content: str | None) -> str: ...
    async def get_title(self, thread_id: str) -> str | None: ...
    async def save_title(self, thread_id: str, title: str) -> None: ...
    async def recall(self, thread_id: str, query: str, *, exclude: set[str]) -> list[Message]: ...
    async def get_observations(self, thread_id: str) -> Observations | None: ...
    async def save_observations(self, thread_id: str, observations: Observations) -> None: ...


def message_to_record(thread_id: str, message: Message, run_id: str | None) -> MessageRecord:
    data = message.model_dump(mode="json", exclude={"id", "role", "content", "created_at"}, exclude_none=True)
    data = {k: v for k, v in data.items() if not (k in ("is_error", "skipped") and v is False)}
    return MessageRecord(
        id=message.id,
        thread_id=thread_id,
        role=message.role,
        content=message.content,
        run_id=run_id,
        created_at=message.created_at_datetime,
        data=data,
    )


def record_to_message(record: MessageRecord) -> Message:
    created = record.created_at
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return Message.model_validate(
        {
            **record.data,
            "id": record.id,
            "role": record.role if record.role in ("system", "user", "assistant", "tool", "custom") else "custom",
            "content": record.content if record.content is not None else "",
            "created_at": round(created.timestamp() * 1000),
            "run_id": record.run_id,
        }
    )


def _created_ms(record: MessageRecord) -> int:
    created = record.created_at
    if created.tzinfo is None:
        created = created.replace(tzinfo=UTC)
    return round(created.timestamp() * 1000)


#: the settings scope of windows learned from refusals, by ``<base URL> <model>``: a restart does not
#: send the first request over the window again to learn it twice
LEARNED_WINDOWS = "model-windows"


class StoreMemory:
    """``Memory`` on a ``Store``."""

    def __init__(
        self,
        store: MemoryStorage,
        *,
        last_messages: int | None = 40,
        working_memory: bool = False,
        working_memory_template: str = DEFAULT_WORKING_MEMORY_TEMPLATE,
        title_generation: bool = False,
        embedder: Embedder | None = None,
        recall_top_k: int = 3,
        recall_min_score: float = 0.2,
        observe_overflow: bool = True,
    ) -> None:
        self.store = store
        self.last_messages = last_messages
        self.working_memory = working_memory
        self.working_memory_template = working_memory_template
        self.title_generation = title_generation
        self.embedder = embedder
        self.recall_top_k = recall_top_k
        self.recall_min_score = recall_min_score
        #: when a run's history holds ``last_messages`` (more may wait unread), its older half becomes
        #: observations (``runtime/compaction.py``); False: the window just slides (older messages
        #: leave the context unobserved, reachable by semantic recall only)
        self.observe_overflow = observe_overflow

    async def _ensure_thread(self, thread_id: str) -> None:
        if await self.store.get_thread(thread_id) is None:
            await self.store.create_thread(thread_id)

    async def load_history(self, thread_id: str) -> list[Message]:
        """The messages a new run sends: those after the observations' cursor (compacted messages
        stay stored but leave the context), the newest ``last_messages`` of them at most (those of
        superseded runs left out), read a page at a time from the newest, never the whole thread
        when it is long."""
        gone = await superseded_runs(self.store, thread_id)
        observed = await self.get_observations(thread_id)
        after = observed.through_at if observed is not None else None

        def wanted_record(r: MessageRecord) -> bool:
            return (r.run_id is None or r.run_id not in gone) and (after is None or _created_ms(r) > after)

        wanted = self.last_messages
        cut = False  # whether older messages were left unread (the window then starts mid-thread)
        if wanted is None:
            records = await self.store.list_messages(thread_id)
        else:
            page = wanted
            while True:  # (messages of superseded runs do not count: then read a bigger page)
                records = await self.store.list_messages(thread_id, last=page)
                kept = sum(1 for r in records if wanted_record(r))
                reached = after is not None and bool(records) and _created_ms(records[0]) <= after  # cursor in page
                if len(records) < page or kept >= wanted or reached:
                    cut = len(records) == page and not reached
                    break
                page *= 4
        messages = [record_to_message(r) for r in records if wanted_record(r)]
        if self.last_messages is not None and (cut or len(messages) > self.last_messages):
            messages = messages[-self.last_messages :]
            # do not start the window with tool results whose call was cut off
            while messages and messages[0].role == "tool":
                messages.pop(0)
        return messages

    async def save_messages(self, thread_id: str, messages: Sequence[Message], *, run_id: str | None = None) -> None:
        if not messages:
            return
        await self._ensure_thread(thread_id)
        await self.store.upsert_messages(thread_id, [message_to_record(thread_id, m, run_id) for m in messages])
        if self.embedder is not None:
            await self._save_embeddings(thread_id, messages)

    # -- observations (compaction) ---------------------------------------------------------

    async def get_observations(self, thread_id: str) -> Observations | None:
        value = await self.store.get_setting(f"thread:{thread_id}", OBSERVATIONS)
        if not isinstance(value, dict):
            return None
        try:
            return Observations.model_validate(value)
        except ValueError:
            return None  # an unreadable record: the thread goes on as if it had none

    async def save_observations(self, thread_id: str, observations: Observations) -> None:
        await self._ensure_thread(thread_id)
        await self.store.set_setting(f"thread:{thread_id}", OBSERVATIONS, observations.model_dump(mode="json"))

    # -- windows learned from refusals (runtime/context.py) -------------------------------------

    async def get_learned_window(self, model_key: str) -> int | None:
        """The context window a model server's refusal taught (in any earlier process), if any."""
        value = await self.store.get_setting(LEARNED_WINDOWS, model_key)
        return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None

    async def save_learned_window(self, model_key: str, tokens: int) -> None:
        await self.store.set_setting(LEARNED_WINDOWS, model_key, int(tokens))

    # -- working memory --------------------------------------------------------------------

    async def get_working_memory(self, thread_id: str) -> str | None:
        value = await self.store.get_setting(f"thread:{thread_id}", "working_memory")
        return value if isinstance(value, str) else None

    async def save_working_memory(self, thread_id: str, content: str) -> None:
        await self._ensure_thread(thread_id)
        await self.store.set_setting(f"thread:{thread_id}", "working_memory", content)

    def working_memory_block(self, content: str | None) -> str:
        return WORKING_MEMORY_INSTRUCTIONS.format(content=(content or self.working_memory_template).strip())

    # -- titles ----------------------------------------------------------------------------

    async def get_title(self, thread_id: str) -> str | None:
        thread = await self.store.get_thread(thread_id)
        return thread.title if thread and thread.title else None

    async def save_title(self, thread_id: str, title: str) -> None:
        await self._ensure_thread(thread_id)
        await self.store.update_thread(thread_id, title=title)

    # -- semantic recall -------------------------------------------------------------------

    def _scope(self, thread_id: str) -> str:
        return f"embeddings:{thread_id}"

    async def _save_embeddings(self, thread_id: str, messages: Sequence[Message]) -> None:
        assert self.embedder is not None
        todo = [m for m in messages if m.role in ("user", "assistant") and m.text.strip()]
        if not todo:
            return
        vectors = await self.embedder.embed([m.text for m in todo])
        stored = await self.store.get_setting(self._scope(thread_id), "vectors") or {}
        for m, v in zip(todo, vectors, strict=False):
            stored[m.id] = [round(x, 6) for x in v]
        await self.store.set_setting(self._scope(thread_id), "vectors", stored)

    async def recall(self, thread_id: str, query: str, *, exclude: set[str]) -> list[Message]:
        if self.embedder is None or not query.strip():
            return []
        stored: dict[str, list[float]] = await self.store.get_setting(self._scope(thread_id), "vectors") or {}
        candidates = {k: v for k, v in stored.items() if k not in exclude}
        if not candidates:
            return []
        [qv] = await self.embedder.embed([query])
        scored = sorted(((cosine(qv, v), k) for k, v in candidates.items()), reverse=True)
        wanted = {k for score, k in scored[: self.recall_top_k] if score >= self.recall_min_score}
        if not wanted:
            return []
        records = await self.store.list_messages(thread_id)
        gone = await superseded_runs(self.store, thread_id)
        return [record_to_message(r) for r in records if r.id in wanted and (r.run_id is None or r.run_id not in gone)]


# -- the working memory tool -----------------------------------------------------------------


class WorkingMemoryArgs(BaseModel):
    memory: str = Field(description="The complete new working memory text (markdown). Replaces the old text.")


def working_memory_tool(memory: Memory) -> Tool:
    async def handler(args: WorkingMemoryArgs, ctx: ToolContext) -> dict[str, Any]:
        if not ctx.thread_id:
            raise ValueError("working memory needs a thread (run the agent with thread_id=...)")
        await memory.save_working_memory(ctx.thread_id, args.memory)
        return {"success": True, "message": "Working memory updated."}

    return Tool(
        WORKING_MEMORY_TOOL,
        "Replace your working memory for this conversation with new markdown text.",
        WorkingMemoryArgs,
        handler,
    )


# -- title generation ------------------------------------------------------------------------

TITLE_INSTRUCTIONS = (
    "You write short titles for conversations. Reply with JSON only: {\"title\": \"...\"}. "
    "The title has 2 to 6 words, at most 50 characters, sentence case, no quotes, no emoji, no final punctuation."
)


def is_substantial(text: str) -> bool:
    """Trivial messages (<= 15 characters or <= 3 words) do not get a title yet."""
    text = text.strip()
    return len(text) > 15 and len(text.split()) > 3


def sanitize_title(raw: str) -> str | None:
    text = re.sub(r"<think>.*?</think>", "", raw, flags=re.S).strip()
    text = re.sub(r"^```[a-z]*\s*|\s*```$", "", text).strip()
    try:
        data = json.loads(text)
        if isinstance(data, dict) and isinstance(data.get("title"), str):
            text = data["title"]
    except json.JSONDecodeError:
        match = re.search(r'"title"\s*:\s*"([^"]*)"', text)
        if match:
            text = match.group(1)
    text = text.splitlines()[0] if text.strip() else ""
    text = re.sub(r"[*_`#>]+", "", text)
    text = re.sub(r"^\s*title\s*:\s*", "", text, flags=re.I)
    for _ in range(2):
        text = text.strip().rstrip(".!?:;,").strip().strip("\"'“”‘’").strip()
    text = re.sub(r"\s+", " ", text)
    if not text:
        return None
    if len(text) > 80:
        cut = text[:80].rsplit(" ", 1)[0]
        text = (cut or text[:80]) + "…"
    return text


async def generate_title(model: ModelAdapter, user_text: str, assistant_text: str = "") -> tuple[str | None, Usage]:
    """One model call that names a conversation; returns ``(title or None, usage)``."""
    prompt = f"User message:\n{user_text.strip()[:2000]}"
    if assistant_text.strip():
        prompt += f"\n\nAssistant reply:\n{assistant_text.strip()[:1000]}"
    request = ModelRequest(
        messages=[{"role": "system", "content": TITLE_INSTRUCTIONS}, {"role": "user", "content": prompt}],
        params={"max_tokens": 60},
    )
    text, usage = await answer_text(model, request)
    return sanitize_title(text), usage
