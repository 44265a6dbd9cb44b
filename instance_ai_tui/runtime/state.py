"""Serialisable run state: what ``Agent.get_state()`` returns and what a checkpoint stores."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

from .messages import Message
from .usage import SubAgentUsage, Usage

RunStatus = Literal["idle", "running", "success", "failed", "suspended", "cancelled", "waiting"]

STATE_VERSION = 1


class PendingToolCall(BaseModel):
    """A tool call of the current response that has not settled: either suspended (waiting for
    ``resume``/``approve``/``deny``) or not executed yet (a later window, after a suspension)."""

    tool_call_id: str
    tool_name: str
    args: dict[str, Any] = Field(default_factory=dict)
    args_error: str | None = None
    response_id: str = ""
    suspended: bool = False
    kind: Literal["approval", "suspend"] | None = None
    suspend_payload: Any = None
    resume_schema: dict[str, Any] | None = None
    #: the tool-call-suspended chunk for this suspension has been emitted
    announced: bool = False


class SettledToolCall(BaseModel):
    """The outcome of a call whose tool message is appended once the whole response settled."""

    tool_call_id: str
    tool_name: str
    response_id: str = ""
    result: Any = None
    error: str | None = None
    is_error: bool = False
    skipped: bool = False
    model_output: str = ""


class ApprovalDecision(BaseModel):
    """Resume data of a call suspended for approval."""

    approved: bool
    reason: str | None = None


class AgentState(BaseModel):
    """A JSON-serialisable snapshot of a run (``model_dump(mode="json")``)."""

    version: int = STATE_VERSION
    agent: str
    run_id: str | None = None
    thread_id: str | None = None
    status: RunStatus = "idle"
    message_list: dict[str, Any] = Field(
        default_factory=lambda: {"messages": [], "historyIds": [], "inputIds": [], "responseIds": []}
    )
    #: tool call ids of the current response, in call order
    batch: list[str] = Field(default_factory=list)
    pending_tool_calls: dict[str, PendingToolCall] = Field(default_factory=dict)
    settled_tool_calls: dict[str, SettledToolCall] = Field(default_factory=dict)
    usage: Usage = Field(default_factory=Usage)
    sub_agent_usage: list[SubAgentUsage] = Field(default_factory=list)
    iteration: int = 0
    max_iterations: int = 20
    finish_reason: str | None = None
    error: str | None = None
    response_id: str | None = None


class RunResult(BaseModel):
    """The outcome of a run: ``generate()`` returns it, ``AgentStream.result()`` too."""

    run_id: str
    agent: str
    thread_id: str | None = None
    status: RunStatus
    finish_reason: str | None = None
    text: str = ""
    messages: list[Message] = Field(default_factory=list)
    usage: Usage = Field(default_factory=Usage)
    total_usage: Usage = Field(default_factory=Usage)
    sub_agent_usage: list[SubAgentUsage] = Field(default_factory=list)
    pending_suspend: list[PendingToolCall] = Field(default_factory=list)
    error: str | None = None
    status_code: int | None = None
    model: str = ""
    #: input tokens of the run's last model request: how full the model's context window was
    context_tokens: int = 0

    @property
    def cost(self) -> float | None:
        return self.usage.cost

    @property
    def total_cost(self) -> float | None:
        return self.total_usage.cost

    @property
    def ok(self) -> bool:
        return self.status == "success"
