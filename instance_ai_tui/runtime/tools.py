"""Tools: a pydantic argument model, an async handler, and the policies around them.

    class Weather(BaseModel):
        city: str

    async def weather(args: Weather, ctx: ToolContext) -> dict:
        return {"city": args.city, "temp_c": 21}

    get_weather = Tool("get_weather", "Current weather of a city.", Weather, weather)

or, from a function signature::

    @tool
    async def get_weather(city: str) -> dict:
        "Current weather of a city."
        ...

Approval: ``needs_approval=True`` or a callable ``(args, ctx) -> bool`` (may be async). A tool
suspends itself with ``ctx.suspend(payload)`` (payload validated against ``suspend_schema``); the
run resumes it with data validated against ``resume_schema``, visible as ``ctx.resume_data``.
"""

from __future__ import annotations

import asyncio
import copy
import inspect
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any, NoReturn, get_type_hints

from pydantic import BaseModel, ConfigDict, ValidationError, create_model

from .usage import SubAgentUsage, Usage

#: Results longer than this (characters of the model-visible text) are truncated with a marker.
DEFAULT_MAX_OUTPUT_CHARS = 50_000


class ToolSuspend(BaseException):
    """Raised by ``ToolContext.suspend``. A BaseException so ``except Exception`` in a tool does
    not swallow it."""

    def __init__(self, payload: Any = None) -> None:
        super().__init__("tool suspended")
        self.payload = payload


class ToolError(Exception):
    """Raise from a handler for an error the model should see verbatim (no traceback text)."""


@dataclass(frozen=True, slots=True)
class ToolProgress:
    """How far a running tool call is (an MCP server's progress notification, a long copy):
    ``progress`` out of ``total`` when the total is known, with an optional short ``message``."""

    tool_call_id: str
    tool_name: str
    progress: float
    total: float | None = None
    message: str | None = None

    @property
    def text(self) -> str:
        """``"40% copying"`` (or ``"12 copying"`` without a total): the words a card shows."""
        head = f"{min(100, round(100 * self.progress / self.total))}%" if self.total else f"{self.progress:g}"
        note = (self.message or "").strip()
        note = note.splitlines()[0][:120] if note else ""
        return f"{head} {note}".strip()


#: where a tool's progress goes (the run's stream: a ``tool-progress`` chunk)
ProgressSink = Callable[[ToolProgress], None]


@dataclass(slots=True)
class ToolContext:
    """What a tool handler gets besides its arguments."""

    run_id: str
    tool_call_id: str
    tool_name: str
    agent_name: str
    thread_id: str | None = None
    #: the validated resume data when the call is resumed after ``suspend`` (None on the first call)
    resume_data: Any = None
    #: the payload this call suspended with, when resumed
    suspend_payload: Any = None
    #: True when the call needed approval and the user approved it
    approved: bool = False
    #: set when the run is aborted; long-running tools and sub-agents should watch it
    cancel: asyncio.Event = field(default_factory=asyncio.Event)
    #: application context (the assistant layer puts its event publisher / agent id here)
    extra: dict[str, Any] = field(default_factory=dict)
    _usage_sink: Callable[[SubAgentUsage], None] | None = None
    _progress_sink: ProgressSink | None = None

    @property
    def resumed(self) -> bool:
        return self.resume_data is not None

    @property
    def cancelled(self) -> bool:
        return self.cancel.is_set()

    def suspend(self, payload: Any = None) -> NoReturn:
        """Stop this call and suspend the run until ``Agent.resume(run_id, tool_call_id, data)``."""
        raise ToolSuspend(payload)

    def report_progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        """Tell the run how far this call is; it reaches the stream as a ``tool-progress`` chunk (the
        assistant shows it on the call's card and as the agent's status). Rate-limit it yourself."""
        if self._progress_sink is not None:
            self._progress_sink(ToolProgress(self.tool_call_id, self.tool_name, progress, total, message))

    def report_usage(self, agent: str, usage: Usage, run_id: str | None = None) -> None:
        """Add a sub-agent's usage to the parent run (``Agent.as_tool`` does this for you)."""
        if self._usage_sink is not None:
            self._usage_sink(SubAgentUsage(agent=agent, run_id=run_id, tool_call_id=self.tool_call_id, usage=usage))


ApprovalPolicy = bool | Callable[[Any, ToolContext], bool | Awaitable[bool]]
Handler = Callable[[Any, ToolContext], Any]


def _strict_compatible(schema: dict[str, Any]) -> bool:
    """True when every object in the schema lists all its properties as required."""

    def walk(node: Any) -> bool:
        if isinstance(node, dict):
            props = node.get("properties")
            if isinstance(props, dict):
                if set(node.get("required", [])) != set(props):
                    return False
            if node.get("type") == "object" and "properties" not in node and node.get("additionalProperties", True):
                return False  # free-form dicts cannot be strict
            return all(walk(v) for v in node.values())
        if isinstance(node, list):
            return all(walk(v) for v in node)
        return True

    return walk(schema)


def strict_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """A JSON schema as OpenAI's structured outputs (``strict: true``) want it: every object closed
    (``additionalProperties: false``) with all its properties required, ``null`` defaults dropped, a
    ``$ref`` with siblings unfolded, a one-entry ``allOf`` merged into its parent. The same rules as
    the ``openai`` package's own conversion (``tests/runtime/test_adapter.py`` compares the two)."""
    root = copy.deepcopy(schema)

    def resolve(ref: str) -> dict[str, Any]:
        if not ref.startswith("#/"):
            raise ValueError(f"a $ref of another document cannot be made strict: {ref!r}")
        node: Any = root
        for key in ref[2:].split("/"):
            node = node[key]
        if not isinstance(node, dict):
            raise ValueError(f"$ref {ref!r} does not name a schema")
        return node

    def fix(node: Any) -> dict[str, Any]:
        if not isinstance(node, dict):
            raise TypeError(f"a JSON schema must be an object, not {node!r}")
        for defs in ("$defs", "definitions"):
            if isinstance(node.get(defs), dict):
                for sub in node[defs].values():
                    fix(sub)
        if node.get("type") == "object":
            node.setdefault("additionalProperties", False)
        props = node.get("properties")
        if isinstance(props, dict):
            node["required"] = list(props)
            node["properties"] = {key: fix(sub) for key, sub in props.items()}
        if isinstance(node.get("items"), dict):
            node["items"] = fix(node["items"])
        if isinstance(node.get("anyOf"), list):
            node["anyOf"] = [fix(sub) for sub in node["anyOf"]]
        all_of = node.get("allOf")
        if isinstance(all_of, list):
            if len(all_of) == 1:
                node.update(fix(all_of[0]))
                node.pop("allOf")
            else:
                node["allOf"] = [fix(sub) for sub in all_of]
        if "default" in node and node["default"] is None:
            del node["default"]
        ref = node.get("$ref")
        if isinstance(ref, str) and len(node) > 1:
            merged = {**resolve(ref), **node}
            merged.pop("$ref")
            node.clear()
            node.update(merged)
            return fix(node)
        return node

    return fix(root)


class Tool:
    """A tool the model can call."""

    def __init__(
        self,
        name: str,
        description: str,
        args_model: type[BaseModel] | None = None,
        handler: Handler | None = None,
        *,
        needs_approval: ApprovalPolicy = False,
        suspend_schema: type[BaseModel] | None = None,
        resume_schema: type[BaseModel] | None = None,
        to_model_output: Callable[[Any], Any] | None = None,
        strict: bool | None = None,
        max_output_chars: int | None = None,
        approval_message: str | Callable[[Any], str] | None = None,
        approval_preview: Callable[[Any, ToolContext], Awaitable[dict[str, Any] | None]] | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> None:
        if not name or not all(c.isalnum() or c in "_-" for c in name) or len(name) > 64:
            raise ValueError(f"invalid tool name {name!r}: use 1-64 letters, digits, '_' or '-'")
        if handler is None:
            raise ValueError(f"tool {name!r} needs a handler")
        self.name = name
        self.description = description
        self.args_model: type[BaseModel] = args_model or create_model(f"{name}_args")
        self.handler = handler
        self.needs_approval = needs_approval
        self.suspend_schema = suspend_schema
        self.resume_schema = resume_schema
        self._to_model_output = to_model_output
        self.max_output_chars = max_output_chars
        self.approval_message = approval_message
        #: what the call would change, shown on its approval card (e.g. a diff); best effort
        self.approval_preview = approval_preview
        self.metadata = dict(metadata or {})
        self.parameters: dict[str, Any] = self.args_model.model_json_schema()
        can_be_strict = _strict_compatible(self.parameters)
        if strict and not can_be_strict:
            raise ValueError(f"tool {name!r}: strict=True needs every argument to be required (no defaults)")
        self.strict: bool = can_be_strict if strict is None else strict
        self._strict_parameters: dict[str, Any] | None = None

    # -- schema -------------------------------------------------------------------------------

    def definition(self, *, strict: bool = True) -> dict[str, Any]:
        """The OpenAI ``tools`` entry. ``strict`` is used only when the tool supports it."""
        function: dict[str, Any] = {"name": self.name, "description": self.description}
        if strict and self.strict:
            # (made once: pydantic builds the schema anew on every call, ~0.25 ms a tool, and this is
            # asked for every tool before every model call)
            if self._strict_parameters is None:
                self._strict_parameters = strict_schema(self.args_model.model_json_schema())
            function["parameters"] = self._strict_parameters
            function["strict"] = True
        else:
            function["parameters"] = self.parameters
        return {"type": "function", "function": function}

    @property
    def resume_json_schema(self) -> dict[str, Any] | None:
        return self.resume_schema.model_json_schema() if self.resume_schema else None

    # -- execution ----------------------------------------------------------------------------

    def validate_args(self, args: dict[str, Any]) -> BaseModel:
        return self.args_model.model_validate(args)

    async def requires_approval(self, args: BaseModel, ctx: ToolContext) -> bool:
        policy = self.needs_approval
        if isinstance(policy, bool):
            return policy
        verdict = policy(args, ctx)
        if inspect.isawaitable(verdict):
            verdict = await verdict
        return bool(verdict)

    def validate_resume(self, data: Any) -> Any:
        """Validate resume data against ``resume_schema`` (raises ``ValidationError``)."""
        if self.resume_schema is None:
            return data
        if isinstance(data, self.resume_schema):
            return data
        return self.resume_schema.model_validate(data)

    def check_suspend_payload(self, payload: Any) -> Any:
        """The JSON form of a suspend payload, validated against ``suspend_schema``."""
        if isinstance(payload, BaseModel):
            payload = payload.model_dump(mode="json")
        if self.suspend_schema is not None:
            payload = self.suspend_schema.model_validate(payload).model_dump(mode="json")
        return payload

    async def invoke(self, args: BaseModel, ctx: ToolContext) -> Any:
        result = self.handler(args, ctx)
        if inspect.isawaitable(result):
            result = await result
        return result

    def model_output(self, result: Any, max_chars: int = DEFAULT_MAX_OUTPUT_CHARS) -> str:
        """The text the model sees for ``result``: ``to_model_output`` then JSON, truncated."""
        value = self._to_model_output(result) if self._to_model_output else result
        return truncate(to_text(value), self.max_output_chars or max_chars)

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

    # -- construction from a function -----------------------------------------------------------

    @classmethod
    def from_function(
        cls,
        fn: Callable[..., Any],
        *,
        name: str | None = None,
        description: str | None = None,
        **options: Any,
    ) -> Tool:
        """Build a tool from a (sync or async) function; parameters become the argument model.

        A parameter annotated ``ToolContext`` receives the context instead."""
        tool_name = name or fn.__name__
        hints = get_type_hints(fn)
        sig = inspect.signature(fn)
        fields: dict[str, Any] = {}
        ctx_param: str | None = None
        for pname, param in sig.parameters.items():
            annotation = hints.get(pname, Any)
            if annotation is ToolContext:
                ctx_param = pname
                continue
            if param.kind in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
                raise ValueError(f"tool {tool_name!r}: *args/**kwargs are not supported")
            default = ... if param.default is inspect.Parameter.empty else param.default
            fields[pname] = (annotation, default)
        model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)

        async def handler(args: BaseModel, ctx: ToolContext) -> Any:
            kwargs = {k: getattr(args, k) for k in fields}
            if ctx_param:
                kwargs[ctx_param] = ctx
            out = fn(**kwargs)
            if inspect.isawaitable(out):
                out = await out
            return out

        doc = description if description is not None else inspect.getdoc(fn) or ""
        return cls(tool_name, doc, model, handler, **options)


def tool(fn: Callable[..., Any] | None = None, **options: Any) -> Any:
    """Decorator form of ``Tool.from_function``: ``@tool`` or ``@tool(name=..., needs_approval=True)``."""
    if fn is not None:
        return Tool.from_function(fn, **options)
    return lambda f: Tool.from_function(f, **options)


def to_text(value: Any) -> str:
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        return str(value)


def truncate(text: str, max_chars: int) -> str:
    """Keep the head and tail of an over-long text, with a marker saying how much was cut."""
    if max_chars <= 0 or len(text) <= max_chars:
        return text
    tail = max_chars // 5
    head = max_chars - tail
    cut = len(text) - head - tail
    return f"{text[:head]}\n[... truncated {cut} of {len(text)} characters ...]\n{text[len(text) - tail:]}"


#: the deepest nesting of a tool call's arguments (objects and arrays): deeper ones are a tool error the
#: model sees, as invalid JSON is; every walker of the arguments after this point (validation, storage,
#: the screen) then stays far from Python's recursion limit
MAX_ARGUMENT_DEPTH = 100


def _deeper_than(value: Any, limit: int) -> bool:
    """Whether ``value`` (parsed JSON) nests objects or arrays more than ``limit`` levels (no recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        if children is None:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return False


def parse_arguments(raw: str | None) -> tuple[dict[str, Any], str | None]:
    """Parse a tool call's JSON arguments. Null/empty -> ``{}``. Returns ``(args, error)``."""
    if raw is None:
        return {}, None
    text = raw.strip()
    if text in ("", "null", "None", "{}"):
        return {}, None
    too_deep = (f"the arguments nest objects or arrays more than {MAX_ARGUMENT_DEPTH} levels deep; "
                "send a flatter JSON object")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        return {}, f"the arguments are not valid JSON ({exc.msg} at position {exc.pos}); send a JSON object"
    except RecursionError:  # the parser itself gave up (some thousand levels)
        return {}, too_deep
    # (no deeper than the brackets it has, in strings or not: most arguments are not walked)
    if text.count("{") + text.count("[") > MAX_ARGUMENT_DEPTH and _deeper_than(value, MAX_ARGUMENT_DEPTH):
        return {}, too_deep
    if value is None:
        return {}, None
    if not isinstance(value, dict):
        return {}, f"the arguments must be a JSON object, got {type(value).__name__}"
    return value, None


def validation_message(exc: ValidationError) -> str:
    """A compact, model-readable description of argument errors."""
    parts = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err.get("loc", ())) or "(arguments)"
        parts.append(f"{loc}: {err.get('msg', 'invalid')}")
    return "invalid arguments: " + "; ".join(parts)
