"""The agent runtime: the seed's AgentRuntime in Python, speaking OpenAI's chat-completions wire format.

Public API (stable; other layers code against these names and signatures)
=========================================================================

Models (``runtime.model``, ``runtime.openai_model``, ``runtime.scripted``)::

    class ModelAdapter(Protocol):
        name: str
        def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None
                   ) -> AsyncIterator[ModelChunk]: ...
        # optional attributes: supports_strict_tools: bool, replay_reasoning: bool

    @dataclass ModelRequest(messages: list[dict], tools: list[dict] = [], tool_choice=None, params: dict = {})
    content_text(content) -> str                       # text of an OpenAI content value
    ModelChunk = ModelTextDelta(text) | ModelReasoningDelta(text)
               | ModelToolCallDelta(index, id=None, name=None, arguments="")   # id/name on first fragment only
               | ModelUsage(usage: Usage)
               | ModelFinish(reason, tool_calls: tuple[ModelToolCall(index, id, name, arguments: str)], model)
    ModelError(message, status_code=None, retryable=False) and its classes (``runtime/errors.py``): ModelUnreachable,
        ModelTimeout, ModelHTTPError > ModelRefused, ModelStreamError > ModelMalformedStream | ModelStreamCut,
        ModelLimitExceeded, ModelCancelled; each has ``code`` (the ``error`` event's) and a message naming the part
    ModelLimits(max_delta_chars, max_tool_args_chars, max_answer_chars, max_answer_seconds, max_run_chars,
                max_run_seconds)  # ``model.limits`` of the adapter, checked by the agent loop (``runtime/limits.py``)

    OpenAIModel(model: str, base_url: str | None = None, api_key: str | None = None, *,
                first_token_timeout: float | None = 60.0, idle_timeout: float | None = 60.0,
                prices: PriceTable | Mapping | None = None, max_retries: int = 2,
                strict_tools: bool | None = None, replay_reasoning: bool = False,
                default_params: dict | None = None, client=None)
        OpenAIModel.from_settings(config.ModelSettings); await model.aclose()
        # base_url/api_key fall back to OPENAI_BASE_URL / OPENAI_API_KEY

    ScriptedModel(script: list[ScriptedResponse | str] | Callable[[ModelRequest], ScriptedResponse | str
                  | Awaitable[...]], *, name="scripted", words_per_chunk=1, delay=0.0, prices=None)
        .requests: list[ModelRequest]; .calls: int
    ScriptedResponse(text="", reasoning="", tool_calls=[ScriptedToolCall(name, arguments=dict|str|None, id=None)],
                     finish_reason=None, usage: Usage | None = None, delay: float | None = None,
                     error: ModelError | None = None)
        ScriptedResponse.call(name, arguments=None, *, id=None, text="")

Tools (``runtime.tools``)::

    Tool(name, description, args_model: type[BaseModel] | None, handler: (args, ctx) -> Any | Awaitable, *,
         needs_approval: bool | Callable[[args, ctx], bool | Awaitable[bool]] = False,
         suspend_schema: type[BaseModel] | None = None, resume_schema: type[BaseModel] | None = None,
         to_model_output: Callable[[result], Any] | None = None, strict: bool | None = None,
         max_output_chars: int | None = None, approval_message: str | Callable[[args], str] | None = None,
         metadata: dict | None = None)
        .definition(strict=True) -> dict (OpenAI tools entry); .resume_json_schema
    Tool.from_function(fn, *, name=None, description=None, **options);  @tool / @tool(**options)
    ToolContext: run_id, tool_call_id, tool_name, agent_name, thread_id, resume_data, suspend_payload,
                 approved: bool, cancel: asyncio.Event, extra: dict, .resumed, .cancelled,
                 .suspend(payload) -> NoReturn (raises ToolSuspend), .report_usage(agent, usage, run_id=None)
    ToolError(message)     # raise for a clean error the model sees
    Results the model sees: to_model_output(result) -> JSON text, truncated with a marker beyond
    max_output_chars (agent default 50 000).

Stream chunks (``runtime.chunks``); every chunk has ``type``, ``run_id``, ``response_id``::

    TextDeltaChunk(delta)  "text-delta"           ReasoningDeltaChunk(delta)  "reasoning-delta"
    ToolCallDeltaChunk(index, tool_call_id, tool_name, args_delta, start)  "tool-call-delta"
    ToolCallChunk(tool_call_id, tool_name, args, args_error)  "tool-call"   (complete, before execution)
    ToolResultChunk(tool_call_id, tool_name, result, error, is_error, skipped, model_output)  "tool-result"
        (emitted as each call settles; tool messages are appended in call order)
    MessageChunk(message: dict)  "message"   (assistant message, then its tool messages)
    ToolCallSuspendedChunk(tool_call_id, tool_name, args, suspend_payload, resume_schema,
                           kind: "approval" | "suspend")  "tool-call-suspended"  (after the checkpoint exists)
    FinishChunk(finish_reason, usage, total_usage, model, sub_agent_usage, suspended)  "finish"
        .cost, .total_cost; finish_reason: stop | max-iterations | length | content-filter | tool-calls | other
    ErrorChunk(error, cancelled: bool, status_code, exception)  "error"   (failure or abort; last chunk)
    chunk.to_dict() -> JSON-friendly dict

Agent (``runtime.agent``)::

    Agent(name, instructions: str | Callable[[], str], model: ModelAdapter, tools: Sequence[Tool] = (), *,
          memory: Memory | None = None, checkpoints: CheckpointStore | None = None (in-memory by default),
          max_iterations=20, tool_call_concurrency=1, require_approval: bool | Collection[str] = False,
          prices: PriceTable | None = None, max_tool_output_chars=50_000, model_params: dict | None = None,
          checkpoint_ttl: float | None = None, title_model: ModelAdapter | None = None, description="")
    agent.stream(input, *, thread_id=None, run_id=None, history=None, cancel: asyncio.Event | None = None,
                 extra: dict | None = None, max_iterations=None) -> AgentStream        # sync; starts the task
    await agent.generate(input, **same options) -> RunResult      # never raises for run failures
    await agent.resume(run_id, tool_call_id, data, *, cancel=None, extra=None, max_iterations=None) -> AgentStream
    await agent.approve(run_id, tool_call_id, **options) -> AgentStream
    await agent.deny(run_id, tool_call_id, reason=None, **options) -> AgentStream
        # resume errors (raised before anything runs): CheckpointNotFound, RunNotSuspended,
        # ResumeConflict (another resume claimed it), UnknownToolCall, InvalidResumeData
    agent.on(event: AgentEvent | str, handler: (AgentEventData) -> None | Awaitable) -> unsubscribe()
        AgentEvent: AgentStart, AgentEnd, TurnStart, TurnEnd, ToolExecutionStart, ToolExecutionEnd, Error
        AgentEventData(type, agent, run_id, thread_id, data: dict)
    agent.abort()                    # all active runs; or pass cancel=Event, or AgentStream.abort()
    agent.get_state() -> dict        # AgentState.model_dump(mode="json"): status idle|running|success|failed|
                                     # suspended|cancelled|waiting, message_list, pending_tool_calls, usage, ...
    agent.as_tool(description, name=None, **tool_options) -> Tool   # {input: str} -> {result: str}
    await agent.wait_background()    # title generation
    agent.side_usage: Usage          # title calls

    AgentStream: async iterator of StreamChunk; .run_id, .thread_id, await .result() -> RunResult,
                 .final (RunResult | None), .abort(), await .aclose(), async with (aborts if unfinished)
    input: str | Message | OpenAI-style dict | list of those

    RunResult(run_id, agent, thread_id, status, finish_reason, text, messages (response delta),
              usage, total_usage, sub_agent_usage, pending_suspend: list[PendingToolCall], error,
              status_code, model) .cost .total_cost .ok
    PendingToolCall(tool_call_id, tool_name, args, args_error, response_id, suspended, kind,
                    suspend_payload, resume_schema)
    ApprovalDecision(approved: bool, reason: str | None)   # resume data of approval suspensions

Messages (``runtime.messages``)::

    Message(id, role: user|assistant|tool|system|custom, content, created_at: int ms, reasoning,
            tool_calls: list[ToolCallPart(id, name, arguments, raw_arguments)], response_id, agent,
            tool_call_id, tool_name, result, is_error, skipped, data)  .to_openai() .text
    MessageList: add_history/add_input/add_response, replace, for_llm(instructions, system_blocks),
                 turn_delta(), response_delta(), input_delta(), serialize(), MessageList.deserialize(d)
    strip_orphaned_tool_messages(messages)

Checkpoints (``runtime.checkpoints``)::

    CheckpointStore protocol: save(run_id, state, *, thread_id, status, ttl) / load / claim(run_id,
        expected_version) (compare-and-set suspended -> running) / complete / list / sweep(now=None)
    InMemoryCheckpointStore(default_ttl=None); StoreCheckpointStore(store: store.base.Store, default_ttl=7 days)

Memory (``runtime.memory``)::

    Memory protocol: working_memory: bool, title_generation: bool, load_history, save_messages,
        get_working_memory, save_working_memory, working_memory_block, get_title, save_title, recall
    StoreMemory(store, *, last_messages=40, working_memory=False, working_memory_template=...,
                title_generation=False, embedder: Embedder | None = None, recall_top_k=3, recall_min_score=0.2)
    Embedder protocol: async embed(texts) -> list[list[float]];  HashingEmbedder(dimensions=256)
    message_to_record(thread_id, message, run_id) / record_to_message(record)
    generate_title(model, user_text, assistant_text="") -> (title | None, Usage)

Usage (``runtime.usage``)::

    Usage(input_tokens, output_tokens, total_tokens, cached_input_tokens, reasoning_tokens, requests, cost)
    SubAgentUsage(agent, run_id, tool_call_id, usage); Price(input, output, cached_input) per 1M tokens
    PriceTable(prices=None, *, defaults=True).extend(...).get(model).priced(model, usage); compute_cost(usage, price)
"""

from __future__ import annotations

from .agent import Agent, AgentInput, AgentStream, normalize_input
from .checkpoints import CheckpointStore, InMemoryCheckpointStore, StoreCheckpointStore
from .chunks import (
    ErrorChunk,
    FinishChunk,
    FinishReason,
    MessageChunk,
    ReasoningDeltaChunk,
    StreamChunk,
    TextDeltaChunk,
    ToolCallChunk,
    ToolCallDeltaChunk,
    ToolCallSuspendedChunk,
    ToolResultChunk,
)
from .errors import (
    CheckpointNotFound,
    InvalidResumeData,
    ResumeConflict,
    RunNotSuspended,
    RuntimeApiError,
    UnknownToolCall,
)
from .events import AgentEvent, AgentEventData
from .limits import ModelLimits
from .memory import Embedder, HashingEmbedder, Memory, StoreMemory, generate_title
from .messages import Message, MessageList, ToolCallPart, strip_orphaned_tool_messages
from .model import (
    ModelAdapter,
    ModelCancelled,
    ModelChunk,
    ModelError,
    ModelFinish,
    ModelHTTPError,
    ModelLimitExceeded,
    ModelMalformedStream,
    ModelReasoningDelta,
    ModelRefused,
    ModelRequest,
    ModelStreamCut,
    ModelStreamError,
    ModelTextDelta,
    ModelTimeout,
    ModelToolCall,
    ModelToolCallDelta,
    ModelUnreachable,
    ModelUsage,
    content_text,
)
from .scripted import ScriptedModel, ScriptedResponse, ScriptedToolCall
from .state import AgentState, ApprovalDecision, PendingToolCall, RunResult, RunStatus
from .tools import Tool, ToolContext, ToolError, ToolSuspend, tool
from .usage import Price, PriceTable, SubAgentUsage, Usage, compute_cost


def __getattr__(name: str):  # OpenAIModel is imported lazily (startup speed)
    if name == "OpenAIModel":
        from .openai_model import OpenAIModel

        return OpenAIModel
    raise AttributeError(name)


__all__ = [
    "Agent",
    "AgentEvent",
    "AgentEventData",
    "AgentInput",
    "AgentState",
    "AgentStream",
    "ApprovalDecision",
    "CheckpointNotFound",
    "CheckpointStore",
    "Embedder",
    "ErrorChunk",
    "FinishChunk",
    "FinishReason",
    "HashingEmbedder",
    "InMemoryCheckpointStore",
    "InvalidResumeData",
    "Memory",
    "Message",
    "MessageChunk",
    "MessageList",
    "ModelAdapter",
    "ModelCancelled",
    "ModelChunk",
    "ModelError",
    "ModelFinish",
    "ModelHTTPError",
    "ModelLimitExceeded",
    "ModelLimits",
    "ModelMalformedStream",
    "ModelReasoningDelta",
    "ModelRefused",
    "ModelRequest",
    "ModelStreamCut",
    "ModelStreamError",
    "ModelTextDelta",
    "ModelTimeout",
    "ModelToolCall",
    "ModelToolCallDelta",
    "ModelUnreachable",
    "ModelUsage",
    "OpenAIModel",
    "PendingToolCall",
    "Price",
    "PriceTable",
    "ReasoningDeltaChunk",
    "ResumeConflict",
    "RunNotSuspended",
    "RunResult",
    "RunStatus",
    "RuntimeApiError",
    "ScriptedModel",
    "ScriptedResponse",
    "ScriptedToolCall",
    "StoreCheckpointStore",
    "StoreMemory",
    "StreamChunk",
    "SubAgentUsage",
    "TextDeltaChunk",
    "Tool",
    "ToolCallChunk",
    "ToolCallDeltaChunk",
    "ToolCallPart",
    "ToolCallSuspendedChunk",
    "ToolContext",
    "ToolError",
    "ToolResultChunk",
    "ToolSuspend",
    "UnknownToolCall",
    "Usage",
    "compute_cost",
    "content_text",
    "generate_title",
    "normalize_input",
    "strip_orphaned_tool_messages",
    "tool",
]
