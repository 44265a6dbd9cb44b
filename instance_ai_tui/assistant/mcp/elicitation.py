"""A server's ``elicitation/create`` (a form it wants the person to fill) asked as a question card.

The form's fields (a flat JSON schema: strings, numbers, booleans, single and multiple choices,
titled or not) become the questions of the card every question uses (``inputType: questions``):
a choice is options (a boolean: yes / no), anything else a free text checked against its type
when the answer comes; a field with a default says it, and skipping it sends the default. The
card is asked in the run of the server's call in progress (it goes under that call), while the
call waits: a live question, not a suspension (``LiveQuestions``; ``InstanceAI.confirm`` answers it
first). Its answer maps to the protocol's actions: the answers → ``accept`` with the values;
``x`` (an ``approval`` of false) → ``decline``; the call ending first (Esc, its timeout) →
``cancel``. A form nobody can be asked in (no call in progress, ``run``'s automatic answers, a
URL-mode request) is declined. Everything of the form is outside text: bounded and shown visibly
by the card.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ...protocol.api import ConfirmBody

log = logging.getLogger(__name__)

#: the most fields one form may ask (more are left out: the answer is declined if one was required)
MAX_FIELDS = 30
#: the most options of one choice
MAX_OPTIONS = 50
#: the extra key of a ``confirmation-request`` that is a server's form (``{"server": NAME}``)
ELICITATION_KEY = "mcpElicitation"
YES, NO = "yes", "no"
_ids = itertools.count(1)


@dataclass
class Field:
    """One field of a form as a question."""

    name: str
    question: str
    kind: str  # "text" | "single" | "multi"
    json_type: str  # string | number | integer | boolean | array
    options: list[str] = field(default_factory=list)
    #: the value each option stands for (a titled choice's ``const``)
    values: list[Any] = field(default_factory=list)
    required: bool = False
    default: Any = None


def _clip(text: Any, limit: int) -> str:
    text = str(text or "").strip()
    return text if len(text) <= limit else text[: limit - 1] + "…"


def form_fields(schema: Any) -> list[Field]:
    """The questions of a requested schema (``{"type": "object", "properties": …, "required": …}``)."""
    data = schema.model_dump(by_alias=True, exclude_none=True) if hasattr(schema, "model_dump") else dict(schema or {})
    properties = data.get("properties") or {}
    required = set(data.get("required") or [])
    fields: list[Field] = []
    for name, spec in list(properties.items())[:MAX_FIELDS]:
        if not isinstance(spec, dict):
            continue
        title = _clip(spec.get("title") or name, 120)
        description = _clip(spec.get("description"), 300)
        json_type = str(spec.get("type") or "string")
        question = f"{title}: {description}" if description else title
        options: list[str] = []
        values: list[Any] = []
        kind = "text"
        if json_type == "boolean":
            kind, options, values = "single", [YES, NO], [True, False]
        elif json_type == "array":
            items = spec.get("items") or {}
            choices = items.get("anyOf") or items.get("oneOf")
            if isinstance(choices, list):
                values = [c.get("const") for c in choices if isinstance(c, dict)]
                options = [_clip(c.get("title") or c.get("const"), 80) for c in choices if isinstance(c, dict)]
            elif isinstance(items.get("enum"), list):
                values = list(items["enum"])
                options = [_clip(v, 80) for v in values]
            kind = "multi"
        elif isinstance(spec.get("oneOf"), list):
            choices = [c for c in spec["oneOf"] if isinstance(c, dict) and "const" in c]
            values = [c["const"] for c in choices]
            options = [_clip(c.get("title") or c["const"], 80) for c in choices]
            kind = "single"
        elif isinstance(spec.get("enum"), list):
            values = list(spec["enum"])
            names = spec.get("enumNames") if isinstance(spec.get("enumNames"), list) else None
            options = [_clip(names[i] if names and i < len(names) else v, 80) for i, v in enumerate(values)]
            kind = "single"
        elif json_type in ("number", "integer"):
            bounds = [f"from {spec['minimum']}" if "minimum" in spec else "",
                      f"to {spec['maximum']}" if "maximum" in spec else ""]
            said = " ".join(b for b in bounds if b)
            question += f" (a{'n integer' if json_type == 'integer' else ' number'}{' ' + said if said else ''})"
        elif spec.get("format") in ("email", "uri", "date", "date-time"):
            question += f" ({spec['format']})"
        options, values = options[:MAX_OPTIONS], values[:MAX_OPTIONS]
        default = spec.get("default")
        if default is not None:
            question += f" — default: {_shown_default(default, options, values)} (s keeps it)"
        if name in required:
            question += " — required"
        fields.append(Field(name=name, question=question, kind=kind, json_type=json_type, options=options,
                            values=values, required=name in required, default=default))
    return fields


def _shown_default(default: Any, options: list[str], values: list[Any]) -> str:
    def one(value: Any) -> str:
        return options[values.index(value)] if value in values else _clip(value, 80)

    if isinstance(default, list):
        return ", ".join(one(v) for v in default)
    return one(default)


class FormError(ValueError):
    """An answer that does not fit the form (the words say which field and why)."""


def content_of(fields: list[Field], answers: list[Any]) -> dict[str, Any]:
    """The ``accept`` content from the card's answers (``QuestionAnswer``s), checked against the fields."""
    by_id = {a.question_id: a for a in answers}
    content: dict[str, Any] = {}
    for f in fields:
        answer = by_id.get(f.name)
        chosen = list(answer.selected_options) if answer is not None else []
        text = (answer.custom_text or "").strip() if answer is not None else ""
        if answer is None or answer.skipped or (not chosen and not text):
            if f.default is not None:
                content[f.name] = f.default
            elif f.required:
                raise FormError(f"{f.name} is required")
            continue
        if f.kind == "multi":
            picked = [f.values[f.options.index(c)] for c in chosen if c in f.options]
            if text:
                picked.append(text)
            content[f.name] = picked
        elif f.kind == "single" and chosen:
            if chosen[0] not in f.options:
                raise FormError(f"{f.name}: {chosen[0]!r} is none of its options")
            content[f.name] = f.values[f.options.index(chosen[0])]
        elif f.json_type == "boolean":
            lowered = text.lower()
            if lowered not in ("yes", "no", "true", "false", "y", "n"):
                raise FormError(f"{f.name}: answer yes or no")
            content[f.name] = lowered in ("yes", "true", "y")
        elif f.json_type in ("number", "integer"):
            try:
                value = int(text) if f.json_type == "integer" else float(text)
            except ValueError:
                raise FormError(f"{f.name}: {text!r} is not a{'n integer' if f.json_type == 'integer' else ' number'}") from None
            content[f.name] = value
        elif f.kind == "single" and f.values and text not in [str(v) for v in f.values]:
            raise FormError(f"{f.name}: {text!r} is none of its options")
        else:
            content[f.name] = text
    return content


class FormAsker(Protocol):
    """The server a form comes from (``connection.ServerConnection``, typed by what is used here)."""

    name: str
    #: its tool calls in progress (their ``ToolContext``s), by a rising number
    calls: dict[int, Any]

    def scrub(self, text: str) -> str: ...


class LiveQuestions:
    """Questions asked while their run goes on (a server's form in the middle of its call):
    ``InstanceAI.confirm`` answers them before looking for a suspended run."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[ConfirmBody]] = {}

    def __contains__(self, request_id: str) -> bool:
        return request_id in self._waiting

    def open(self, request_id: str) -> asyncio.Future[ConfirmBody]:
        future: asyncio.Future[ConfirmBody] = asyncio.get_running_loop().create_future()
        self._waiting[request_id] = future
        return future

    def answer(self, request_id: str, body: ConfirmBody) -> bool:
        future = self._waiting.pop(request_id, None)
        if future is None or future.done():
            return False
        future.set_result(body)
        return True

    def close(self, request_id: str) -> None:
        future = self._waiting.pop(request_id, None)
        if future is not None and not future.done():
            future.cancel()

    def close_for(self, tool_call_id: str) -> None:
        """The call ``tool_call_id`` ended: its questions still open are cancelled."""
        for request_id in [r for r in self._waiting if r.endswith(f"-{tool_call_id}")]:
            self.close(request_id)


async def ask(conn: FormAsker, params: Any, questions: LiveQuestions) -> Any:
    """Ask a server's form in the run of its call in progress; the protocol's ``ElicitResult``."""
    import mcp_types

    from ...protocol.api import ApprovalConfirm, QuestionsConfirm
    from ...protocol.events import ConfirmationPayload, ConfirmationRequestEvent, Question
    from ..context import EXTRA_KEY, AgentScope

    decline = mcp_types.ElicitResult(action="decline")
    if getattr(params, "mode", "form") != "form":
        log.info("MCP server %s asked for a URL interaction (elicitation url mode): declined", conn.name)
        return decline
    ctx = conn.calls[max(conn.calls)] if conn.calls else None
    scope = ctx.extra.get(EXTRA_KEY) if ctx is not None else None
    if ctx is None or not isinstance(scope, AgentScope):
        log.info("MCP server %s asked a form outside of a call: declined", conn.name)
        return decline
    fields = form_fields(params.requested_schema)
    if not fields:
        return decline
    request_id = f"mcp-elicit-{next(_ids)}-{ctx.tool_call_id}"
    message = conn.scrub(_clip(params.message, 1000)) or "The server asks for some information."
    payload = ConfirmationPayload.model_validate({
        "requestId": request_id, "toolCallId": ctx.tool_call_id, "toolName": ctx.tool_name,
        "severity": "info", "message": f"The MCP server {conn.name} asks: {message}", "inputType": "questions",
        "introMessage": f"(asked by the MCP server {conn.name}: x on the last page declines)",
        "questions": [Question(id=f.name, question=f.question, type=f.kind,  # type: ignore[arg-type]
                               options=f.options or None).model_dump(by_alias=True, exclude_none=True)
                      for f in fields],
        ELICITATION_KEY: {"server": conn.name},
    })
    future = questions.open(request_id)
    await scope.mapper.announced(ctx.tool_call_id)
    scope.run.emitter.emit(ConfirmationRequestEvent(agent_id=scope.agent_id, payload=payload))
    try:
        body = await future
    except asyncio.CancelledError:
        questions.close(request_id)
        return mcp_types.ElicitResult(action="cancel")
    if isinstance(body, ApprovalConfirm) and not body.approved:
        return mcp_types.ElicitResult(action="cancel" if body.user_input == "cancel" else "decline")
    if isinstance(body, QuestionsConfirm):
        try:
            return mcp_types.ElicitResult(action="accept", content=content_of(fields, body.answers))
        except FormError as exc:
            log.info("MCP server %s: the form's answer does not fit (%s): declined", conn.name, exc)
            return decline
    return decline
