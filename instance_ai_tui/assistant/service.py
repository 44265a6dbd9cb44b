"""``InstanceAI``: the assistant service (``AssistantService``) on a ``Store`` and an ``EventBus``.

    store = SqliteStore(path); bus = InProcessBus(store)
    ai = InstanceAI(store, bus, model="demo", workspace_root=Path.cwd())
    await ai.start()                      # opens the store, sweeps crashed runs, reloads suspended ones
    run_id = await ai.send("thread-1", "every morning send the weather to Slack")
    async for event in ai.events("thread-1"):  # StoredEvent: .id, .type, .data()
        ...
    await ai.shutdown()                   # active runs end with run-finish {cancelled, service_shutdown}

The model is a ``ModelAdapter``, or a name: ``None`` / ``"demo"`` -> the offline demo model
(labelled "demo (offline)"), anything else -> ``OpenAIModel`` with ``settings.model`` (or the
``OPENAI_*`` environment). n8n tools use ``n8n`` if given, else the public API when
``settings.n8n_url`` and ``settings.n8n_api_key`` are set, else (demo model only) an in-memory
demo instance. File tools are there when a workspace root is given (or ``settings.workspace_root``).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import re
import uuid
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ParamSpec, TypeVar

from ..bus.base import EventBus
from ..config import Settings
from ..protocol.api import (
    ConfirmBody,
    ConfirmResponse,
    ModelInfo,
    ModelList,
    RewindResponse,
    ThreadInfo,
    ThreadMessages,
    ThreadPermissions,
    ThreadStatus,
)
from ..runtime.checkpoints import StoreCheckpointStore
from ..runtime.memory import mark_superseded
from ..runtime.model import ModelAdapter
from ..store.base import Store, StoredEvent, ThreadRecord
from ..store.base import ThreadNotFound as StoreThreadNotFound
from .confirmations import DEFAULT_TTL_SECONDS
from .context import Services
from .coordination import RunCoordinator
from .demo_instance import DemoN8n
from .errors import (
    ConfirmationNotFound,
    InvalidRequest,
    MessageNotFound,
    ModelNotAvailable,
    PermissionNotFound,
    RunActive,
    ThreadNotFound,
)
from .history import thread_messages
from .ids import new_thread_id
from .mcp import servers_for
from .models import ModelCatalog, ModelChoice, context_window, is_demo_name, select_model
from .n8n_client import N8nBackend, N8nPublicApi
from .orchestrator import build_orchestrator
from .run_manager import AUTO_TITLE_KEY, RETITLE_KEY, ManagerOptions, RunManager
from .workspace import Workspace

log = logging.getLogger(__name__)

_THREAD_ID = re.compile(r"^[A-Za-z0-9_.:@-]{1,128}$")


@dataclass
class AssistantOptions:
    max_sub_agents: int = 3
    sub_agent_max_iterations: int = 12
    orchestrator_max_iterations: int = 30
    #: at most this many messages after the observations' cursor are read for a run (older ones not
    #: compacted yet are compacted first: ``runtime/compaction.py``)
    history_messages: int = 200
    #: seconds a confirmation waits for an answer (then it expires)
    confirmation_ttl: float = DEFAULT_TTL_SECONDS
    generate_titles: bool = True
    title_timeout: float = 15.0
    #: seconds between streamed pieces of the demo model (0 = as fast as possible)
    demo_delay: float = 0.0
    #: seconds between sweeps that end runs whose confirmations all expired (0 = no sweeper)
    sweep_interval: float = 60.0
    #: ``shutdown()`` also closes the bus and the store
    close_storage: bool = True


def check_thread_id(thread_id: str) -> str:
    if not isinstance(thread_id, str) or not _THREAD_ID.match(thread_id):
        raise InvalidRequest("a thread id is 1-128 characters of letters, digits and _ . : @ -")
    return thread_id


_P = ParamSpec("_P")
_R = TypeVar("_R")


def _store_errors_translated(
    method: Callable[_P, Coroutine[Any, Any, _R]],
) -> Callable[_P, Coroutine[Any, Any, _R]]:
    """The service's callers (server, embedded client) see the assistant's errors only: the
    store's ``ThreadNotFound`` (a thread deleted meanwhile) becomes ``errors.ThreadNotFound``."""

    @functools.wraps(method)
    async def translated(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        try:
            return await method(*args, **kwargs)
        except StoreThreadNotFound as exc:
            thread_id = exc.args[0] if exc.args else ""
            raise ThreadNotFound(f"thread {thread_id!r} not found") from None

    return translated


def _thread_info(record: ThreadRecord) -> ThreadInfo:
    return ThreadInfo(id=record.id, title=record.title, created_at=record.created_at, updated_at=record.updated_at,
                      metadata=record.metadata)


class InstanceAI:
    """The Instance AI assistant (implements ``assistant.service_api.AssistantService``)."""

    def __init__(
        self,
        store: Store,
        bus: EventBus,
        *,
        model: ModelAdapter | str | None = None,
        settings: Settings | None = None,
        workspace_root: Path | str | None = None,
        n8n: N8nBackend | None = None,
        title_model: ModelAdapter | None = None,
        options: AssistantOptions | None = None,
        model_label: str | None = None,
        coordinator: RunCoordinator | None = None,
    ) -> None:
        self.store = store
        self.bus = bus
        self.settings = settings or Settings()
        self.options = options or AssistantOptions()
        self._owned: list[object] = []
        if isinstance(model, str) or model is None:
            choice = select_model(model, self.settings.model, demo_delay=self.options.demo_delay)
            adapter, label, is_demo = choice.model, choice.label, choice.is_demo
            if not is_demo:
                self._owned.append(adapter)
        else:
            adapter, label, is_demo = model, model.name, False
        #: label of the model for the UI
        self.model_label: str = model_label or label
        self.model = adapter
        root = workspace_root if workspace_root is not None else self.settings.workspace_root
        workspace = Workspace(root) if root is not None else None
        backend = n8n if n8n is not None else self._n8n_backend(is_demo)
        self.n8n = backend
        #: the configured MCP servers (None without any): their tools join the domain tools
        self.mcp = servers_for(self.settings)
        services = Services(
            model=adapter,
            checkpoints=StoreCheckpointStore(store),
            workspace=workspace,
            n8n=backend,
            sub_agent_max_iterations=self.options.sub_agent_max_iterations,
            mcp=self.mcp,
        )
        if self.mcp is not None:
            self.mcp.hooks.ask_forms()  # a server's form is a question card in the run of its call
        services.sub_agent_limit = asyncio.Semaphore(self.options.max_sub_agents)
        services.catalog = ModelCatalog(ModelChoice(adapter, self.model_label, is_demo), self.settings.model,
                                        demo_delay=self.options.demo_delay)
        self.services = services
        self.orchestrator = build_orchestrator(services, store, max_iterations=self.options.orchestrator_max_iterations,
                                               history_messages=self.options.history_messages,
                                               context_threshold=self.settings.model.compact_threshold)
        titles = title_model if title_model is not None else (adapter if self.options.generate_titles else None)
        self.runs = RunManager(
            store, bus, services, self.orchestrator, title_model=titles,
            options=ManagerOptions(confirmation_ttl=self.options.confirmation_ttl,
                                   generate_titles=self.options.generate_titles,
                                   title_timeout=self.options.title_timeout, owner=f"instance-ai-{uuid.uuid4().hex[:8]}"),
            coordinator=coordinator,
        )
        self._started = False
        self._sweeper: asyncio.Task[None] | None = None
        #: thread id -> the send or rewind going on in it (``_one_at_a_time``)
        self._changing: dict[str, str] = {}

    def _n8n_backend(self, is_demo: bool) -> N8nBackend | None:
        url, key = self.settings.n8n_url, self.settings.n8n_api_key
        if url and key is not None and key.get_secret_value():
            backend = N8nPublicApi(url, key)
            self._owned.append(backend)
            return backend
        return DemoN8n(self.store) if is_demo else None

    # ----------------------------------------------------------------- lifecycle
    async def start(self) -> None:
        if self._started:
            return
        await self.store.open()
        await self.runs.recover()
        if self.options.sweep_interval > 0:
            self._sweeper = asyncio.get_running_loop().create_task(self._sweep_loop(), name="instance-ai-sweeper")
        if self.mcp is not None:
            self.mcp.start()  # in the background: the service is ready before its MCP servers
        self._started = True

    async def _sweep_loop(self) -> None:
        while True:
            await asyncio.sleep(self.options.sweep_interval)
            try:
                await self.runs.expire()
            except Exception:
                log.exception("the expiry sweep failed")

    async def shutdown(self) -> None:
        if self._sweeper is not None:
            self._sweeper.cancel()
            try:
                await self._sweeper
            except asyncio.CancelledError:
                pass
            self._sweeper = None
        await self.runs.shutdown()
        await self.services.catalog.aclose()
        if self.mcp is not None:
            await self.mcp.aclose()  # every server's process is gone before this returns
        for owned in self._owned:
            close = getattr(owned, "aclose", None)
            if close is not None:
                try:
                    await close()
                except Exception as exc:  # noqa: BLE001 - shutting down: one resource failing to close must not keep the others open
                    log.warning("closing %r failed: %s", owned, exc)
        self._owned.clear()
        if self.options.close_storage:
            await self.bus.close()
            await self.store.close()
        self._started = False

    # ----------------------------------------------------------------- threads
    @_store_errors_translated
    async def list_threads(self, search: str | None = None) -> list[ThreadInfo]:
        return [_thread_info(r) for r in await self.store.list_threads(search=search or None)]

    @_store_errors_translated
    async def create_thread(self, thread_id: str | None = None, title: str = "") -> ThreadInfo:
        thread_id = check_thread_id(thread_id) if thread_id is not None else new_thread_id()
        if len(title) > 255:
            raise InvalidRequest("a title is at most 255 characters")
        existing = await self.store.get_thread(thread_id)
        if existing is not None and not title:
            return _thread_info(existing)
        return _thread_info(await self.store.create_thread(thread_id, title=title.strip()))

    @_store_errors_translated
    async def get_thread(self, thread_id: str) -> ThreadInfo:
        record = await self.store.get_thread(check_thread_id(thread_id))
        if record is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        return _thread_info(record)

    @_store_errors_translated
    async def rename_thread(self, thread_id: str, title: str) -> ThreadInfo:
        check_thread_id(thread_id)
        title = (title or "").strip()
        if not title or len(title) > 255:
            raise InvalidRequest("a title is 1-255 characters")
        return _thread_info(await self.store.update_thread(thread_id, title=title))

    @_store_errors_translated
    async def delete_thread(self, thread_id: str) -> None:
        check_thread_id(thread_id)
        if await self.store.get_thread(thread_id) is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        await self.runs.cancel(thread_id)
        await self.store.delete_thread(thread_id)

    # ----------------------------------------------------------------- runs
    @_store_errors_translated
    async def send(self, thread_id: str, text: str) -> str:
        check_thread_id(thread_id)
        if not isinstance(text, str) or not text.strip():
            raise InvalidRequest("the message must not be empty")
        with self._one_at_a_time(thread_id, "message is being sent"):
            mcp = self.mcp
            if mcp is None or "@" not in text:
                return await self.runs.start(thread_id, text)
            from .mcp.resources import attach  # ``@server:uri``: the resource's text goes with the message

            model_text, attachments = await attach(mcp.connections, text)
            return await self.runs.start(thread_id, text, model_text=model_text,
                                         attachments=[a.model_dump(by_alias=True, exclude_none=True) for a in attachments])

    @_store_errors_translated
    async def compact(self, thread_id: str, keep: str = "") -> str:
        """``/compact [keep]``: a run that turns the thread's context into notes; its run id. An unknown
        thread is ``ThreadNotFound``; a busy one ``RunActive``."""
        check_thread_id(thread_id)
        if await self.store.get_thread(thread_id) is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        with self._one_at_a_time(thread_id, "message is being sent"):
            return await self.runs.compact(thread_id, keep)

    @contextlib.contextmanager
    def _one_at_a_time(self, thread_id: str, doing: str) -> Iterator[None]:
        """Sending and rewinding change the same turns: on one thread they never overlap. The
        second of two at the same moment is refused (``RunActive``: 409) instead of waiting, so
        a send never starts a run that a rewind then supersedes, nor a rewind picks the turns
        a starting run is adding to. (One process: Redis-coordinated servers share no lock.)"""
        busy = self._changing.get(thread_id)
        if busy is not None:
            raise RunActive(f"a {busy} in this thread right now: try again when it is done")
        self._changing[thread_id] = doing
        try:
            yield
        finally:
            del self._changing[thread_id]

    def storage_wait(self, thread_id: str) -> str:
        """What the thread's run waits for in the storage: its events held while the database is
        locked by another program ("the database is locked by another program (PID 4242)"); ""."""
        return self.runs.storage_wait(thread_id)

    @_store_errors_translated
    async def cancel(self, thread_id: str) -> bool:
        check_thread_id(thread_id)
        if self.runs.live(thread_id) is None and await self.store.get_thread(thread_id) is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        return await self.runs.cancel(thread_id)

    @_store_errors_translated
    async def confirm(self, request_id: str, body: ConfirmBody) -> ConfirmResponse:
        mcp = self.mcp
        if mcp is not None and request_id in mcp.hooks.questions:  # a server's form, asked while its call waits
            if not mcp.hooks.questions.answer(request_id, body):
                raise ConfirmationNotFound(f"no pending confirmation {request_id!r} (answered or cancelled)")
            return ConfirmResponse()
        return await self.runs.confirm(request_id, body)

    def events(self, thread_id: str, after: int = 0) -> AsyncIterator[StoredEvent]:
        check_thread_id(thread_id)
        return self.bus.subscribe(thread_id, after=max(0, int(after)))

    def event_batches(self, thread_id: str, after: int = 0) -> AsyncIterator[list[StoredEvent]]:
        check_thread_id(thread_id)
        return self.bus.subscribe_batches(thread_id, after=max(0, int(after)))

    @_store_errors_translated
    async def models(self, thread_id: str | None = None) -> ModelList:
        """The models a thread can use, the one it uses, and context windows where known."""
        catalog: ModelCatalog = self.services.catalog
        current = self.model_label
        chosen: str | None = None
        if thread_id is not None:
            thread = await self.get_thread(thread_id)
            picked = thread.metadata.get("model")
            chosen = picked if isinstance(picked, str) and picked else None
            current = catalog.label(chosen) if chosen else current
        names = await catalog.available()
        if current not in names:
            names.insert(0, current)
        windows = self.settings.model.context_windows

        def window(name: str) -> int | None:
            """What the runtime knows of the model in use (reported by its server, learned from a
            refusal), else the config's or the table's window."""
            if name == current:
                from ..runtime.context import budget_of

                try:
                    budget = budget_of(catalog.get(chosen))
                except ValueError:
                    budget = None
                if budget is not None and budget.source in ("server", "learned"):
                    return budget.window
            return context_window(name, windows)

        return ModelList(models=[ModelInfo(name=n, context_window=window(n)) for n in names],
                         current=current, default=self.model_label)

    @_store_errors_translated
    async def set_model(self, thread_id: str, name: str) -> ThreadInfo:
        """Use model ``name`` in this thread from its next run on (the default: ``""``). An
        unknown thread is ``ThreadNotFound`` (it is not created: one request per id made a
        thread each)."""
        check_thread_id(thread_id)
        name = (name or "").strip()
        record = await self.store.get_thread(thread_id)
        if record is None:
            raise ThreadNotFound(f"thread {thread_id!r} not found")
        catalog: ModelCatalog = self.services.catalog
        default = not name or catalog.label(name) == self.model_label
        if not default:
            try:
                catalog.get(name)
            except ValueError as exc:
                raise ModelNotAvailable(f"model {name!r} cannot be used: {exc}") from None
        metadata = {k: v for k, v in record.metadata.items() if k != "model"}
        if not default:
            metadata["model"] = "demo" if is_demo_name(name) else name
        return _thread_info(await self.store.update_thread(thread_id, metadata=metadata))

    async def rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        """Supersede the turn of user message ``message_id`` and every later turn: they stay in
        the thread's history (marked ``superseded``) and leave the model's context, so the next
        message continues from before that turn (retry, edit and resend, rewind). Never at the
        same time as a send in this thread (``_one_at_a_time``: the later one is a 409)."""
        with self._one_at_a_time(thread_id, "rewind is going on"):
            return await self._rewind(thread_id, message_id)

    async def _rewind(self, thread_id: str, message_id: str) -> RewindResponse:
        await self.get_thread(thread_id)
        if self.runs.live(thread_id) is not None or await self.store.list_runs(
            thread_id=thread_id, status=["active", "suspended"]
        ):
            raise RunActive("a run is active or waiting for an answer in this thread: cancel it first")
        runs = await self.store.list_runs(thread_id=thread_id)
        start = next(
            (n for n, r in enumerate(runs) if message_id in (r.data.get("messageId"), f"{r.run_id}-user")), None
        )
        if start is None:
            raise MessageNotFound(f"no user message {message_id!r} in this thread")
        target = runs[start]
        rewound = [r for r in runs[start:] if not r.data.get("superseded")]
        for record in rewound:
            await self.store.upsert_run(record.model_copy(update={"data": {**record.data, "superseded": True}}))
        await mark_superseded(self.store, thread_id, [r.run_id for r in rewound])
        if all(r.data.get("superseded") for r in runs[:start]):
            await self._retitle_from_next_message(thread_id)
        return RewindResponse(superseded_run_ids=[r.run_id for r in rewound],
                              text=str(target.data.get("userMessage") or ""))

    async def _retitle_from_next_message(self, thread_id: str) -> None:
        """The thread was rewound to its first message: the title this assistant gave it (from that
        message) is asked for again from the next one; a title the person chose stays."""
        record = await self.store.get_thread(thread_id)
        if record is not None and record.title and record.title == record.metadata.get(AUTO_TITLE_KEY):
            await self.store.update_thread(thread_id, metadata={**record.metadata, RETITLE_KEY: True})

    @_store_errors_translated
    async def messages(self, thread_id: str, *, limit: int | None = None, page: int = 0) -> ThreadMessages:
        await self.get_thread(thread_id)
        return await thread_messages(self.store, self.runs, thread_id, limit=limit, page=page)

    @_store_errors_translated
    async def permissions(self, thread_id: str) -> ThreadPermissions:
        """The thread's "always allow" grants."""
        from .approvals import load_allowances

        await self.get_thread(thread_id)
        return ThreadPermissions(always_allow=sorted(await load_allowances(self.store, thread_id)))

    async def revoke_permission(self, thread_id: str, tool_name: str) -> ThreadPermissions:
        """Revoke one "always allow" grant: stored, and in the run going now (its next call of
        that tool asks again)."""
        from .approvals import load_allowances, revoke_allowance

        await self.get_thread(thread_id)
        if tool_name not in await load_allowances(self.store, thread_id):
            raise PermissionNotFound(f"{tool_name!r} is not always allowed in this thread")
        run = self.runs.live(thread_id)
        live = run.ctx.allowances if run is not None else None
        return ThreadPermissions(always_allow=await revoke_allowance(self.store, thread_id, tool_name, live))

    async def status(self, thread_id: str) -> ThreadStatus:
        run = self.runs.live(thread_id)
        if run is None:
            await self.get_thread(thread_id)
            for record in await self.store.list_runs(thread_id=thread_id, status=["active", "suspended"]):
                # a run of another server process on the same store
                return ThreadStatus(has_active_run=record.status == "active",
                                    is_suspended=record.status == "suspended", run_id=record.run_id)
            return ThreadStatus()
        return ThreadStatus(
            has_active_run=run.status == "active",
            is_suspended=run.status == "suspended",
            run_id=run.run_id,
            background_tasks=list(run.ctx.background.values()),
        )
