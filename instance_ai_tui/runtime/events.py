"""Lifecycle events an ``Agent`` emits to handlers registered with ``Agent.on``.

Handlers are called in registration order with one ``AgentEventData``; they may be plain
functions or coroutines (awaited). A handler that raises is logged and never breaks the run.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any

log = logging.getLogger(__name__)


class AgentEvent(StrEnum):
    AGENT_START = "AgentStart"  # a run (or a resumed run) starts
    AGENT_END = "AgentEnd"  # a run finished successfully: data {messages}
    TURN_START = "TurnStart"  # before each model call: data {iteration, response_id}
    TURN_END = "TurnEnd"  # after a response's tool calls settled: data {message, tool_results}
    TOOL_EXECUTION_START = "ToolExecutionStart"  # data {tool_call_id, tool_name, args}
    TOOL_EXECUTION_END = "ToolExecutionEnd"  # data {tool_call_id, tool_name, result, is_error}
    ERROR = "Error"  # a run failed (not on abort): data {message, error}


@dataclass(slots=True)
class AgentEventData:
    type: AgentEvent
    agent: str
    run_id: str
    thread_id: str | None = None
    data: dict[str, Any] = field(default_factory=dict)


EventHandler = Callable[[AgentEventData], "Awaitable[None] | None"]


class EventHub:
    def __init__(self) -> None:
        self._handlers: dict[AgentEvent, list[EventHandler]] = {}

    def on(self, event: AgentEvent | str, handler: EventHandler) -> Callable[[], None]:
        key = AgentEvent(event)
        self._handlers.setdefault(key, []).append(handler)

        def off() -> None:
            handlers = self._handlers.get(key, [])
            if handler in handlers:
                handlers.remove(handler)

        return off

    def has(self, event: AgentEvent) -> bool:
        return bool(self._handlers.get(event))

    async def emit(self, data: AgentEventData) -> None:
        for handler in list(self._handlers.get(data.type, ())):
            try:
                out = handler(data)
                if inspect.isawaitable(out):
                    await out
            except Exception:  # a broken handler must not break the run
                log.exception("agent event handler for %s failed", data.type)
