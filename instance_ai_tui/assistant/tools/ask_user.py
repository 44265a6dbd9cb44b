"""``ask-user``: structured questions to the user (``confirmation-request`` with ``inputType``
``questions``, or ``text`` for a single free-text question). The answers come back through
confirm ``{kind: "questions", answers}`` (or ``{kind: "approval", userInput}`` for text)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field
from pydantic.alias_generators import to_camel

from ...runtime.tools import Tool, ToolContext
from ..confirmations import ConfirmationAnswer


class QuestionArg(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=64)
    question: str = Field(min_length=1)
    type: Literal["single", "multi", "text"] = "single"
    options: list[str] | None = Field(None, description="Choices for single/multi questions")


class AskUserArgs(BaseModel):
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid")

    questions: list[QuestionArg] = Field(min_length=1, max_length=10)
    intro_message: str | None = Field(None, description="One sentence shown above the questions")


def _card(args: AskUserArgs) -> dict[str, Any]:
    if len(args.questions) == 1 and args.questions[0].type == "text":
        return {"inputType": "text", "severity": "info", "message": args.questions[0].question,
                **({"introMessage": args.intro_message} if args.intro_message else {})}
    card: dict[str, Any] = {
        "inputType": "questions", "severity": "info",
        "message": args.intro_message or "A few questions before I continue",
        "questions": [q.model_dump(exclude_none=True) for q in args.questions],
    }
    if args.intro_message:
        card["introMessage"] = args.intro_message
    return card


def _answers(args: AskUserArgs, answer: ConfirmationAnswer) -> list[dict[str, Any]]:
    by_id = {q.id: q for q in args.questions}
    if answer.answers is None and answer.user_input is not None:
        return [{"questionId": args.questions[0].id, "question": args.questions[0].question,
                 "answer": answer.user_input}]
    out = []
    for raw in answer.answers or []:
        qid = str(raw.get("questionId", ""))
        question = by_id.get(qid)
        if question is None:
            continue
        if raw.get("skipped"):
            text = "(skipped)"
        else:
            parts = [str(o) for o in raw.get("selectedOptions") or []]
            if raw.get("customText"):
                parts.append(str(raw["customText"]))
            text = ", ".join(parts) or "(no answer)"
        out.append({"questionId": qid, "question": question.question, "answer": text})
    return out


async def ask_user_handler(args: AskUserArgs, ctx: ToolContext) -> dict[str, Any]:
    if not ctx.resumed:
        ctx.suspend({"confirmation": _card(args)})
    answer: ConfirmationAnswer = ctx.resume_data
    if not answer.approved:
        return {"skipped": True, "message": "The user did not answer. Continue with sensible defaults, "
                                            "or ask again in plain text."}
    return {"answers": _answers(args, answer)}


def ask_user_tool() -> Tool:
    return Tool(
        "ask-user",
        "Ask the user structured questions (single choice, multiple choice or free text) when the request "
        "is ambiguous. The run waits for the answers.",
        AskUserArgs, ask_user_handler, resume_schema=ConfirmationAnswer,
    )
