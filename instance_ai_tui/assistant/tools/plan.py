"""``plan``: create or update the run's task checklist (``tasks-update``), optionally reviewed.

``{"action": "create", "goal": ..., "tasks": [{id, description, status}], "review": false}``
publishes the checklist in the seed's flat form (statuses pending / in_progress / completed /
failed / cancelled). ``update`` merges by task id. With ``review: true`` the call suspends
with a ``plan-review`` confirmation: approve -> the plan stands; approve=false with feedback
-> the model is told to revise; ``planDeny`` -> the plan is rejected for this turn.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from ...protocol.events import TasksUpdateEvent, TasksUpdatePayload
from ...runtime.tools import Tool, ToolContext, ToolError
from ..confirmations import ConfirmationAnswer
from ..context import scope_of

_STATUS_ALIASES = {"todo": "pending", "done": "completed", "canceled": "cancelled"}


class TaskArg(BaseModel):
    model_config = ConfigDict(extra="forbid")

    id: str = Field(min_length=1, max_length=64)
    description: str | None = Field(None, description="What the task achieves (required for new tasks)")
    status: Literal["pending", "in_progress", "completed", "failed", "cancelled", "todo", "done", "canceled"] = "pending"


class PlanArgs(BaseModel):
    model_config = ConfigDict(extra="forbid")

    action: Literal["create", "update"] = "create"
    goal: str | None = Field(None, description="One line: what the whole plan achieves")
    tasks: list[TaskArg] = Field(default_factory=list, description="create: every task; update: the changed ones")
    review: bool = Field(False, description="Ask the user to approve the plan before working on it")


def merge_tasks(current: list[dict[str, Any]], args: PlanArgs) -> list[dict[str, Any]]:
    """The new flat checklist."""
    if args.action == "create":
        if not args.tasks:
            raise ToolError("a new plan needs at least one task")
        base: list[dict[str, Any]] = []
    else:
        if not current:
            raise ToolError("there is no plan to update yet; call plan with action 'create' first")
        base = [dict(t) for t in current]
    index = {t["id"]: t for t in base}
    for task in args.tasks:
        status = _STATUS_ALIASES.get(task.status, task.status)
        if task.id in index:
            index[task.id]["status"] = status
            if task.description:
                index[task.id]["description"] = task.description
        else:
            if not task.description:
                raise ToolError(f"task {task.id!r} is new and needs a description")
            item = {"id": task.id, "description": task.description, "status": status}
            base.append(item)
            index[task.id] = item
    if len(index) != len(base):
        raise ToolError("task ids must be unique")
    return base


def _summary(tasks: list[dict[str, Any]]) -> str:
    done = sum(1 for t in tasks if t["status"] == "completed")
    return f"{done}/{len(tasks)} tasks completed"


async def plan_handler(args: PlanArgs, ctx: ToolContext) -> dict[str, Any]:
    scope = scope_of(ctx)
    run = scope.run
    if ctx.resumed:
        answer: ConfirmationAnswer = ctx.resume_data
        tasks = list((ctx.suspend_payload or {}).get("confirmation", {}).get("tasks") or run.tasks)
        run.tasks = tasks
        if answer.approved:
            note = f" The user added: {answer.user_input}" if answer.user_input else ""
            return {"approved": True, "goal": args.goal, "tasks": tasks,
                    "message": f"The user approved the plan. Work through it now.{note}"}
        if answer.denied:
            return {"approved": False, "rejected": True,
                    "message": "The user rejected the plan. Do not make another plan in this turn; "
                               "ask what they would like instead."}
        return {"approved": False, "feedback": answer.user_input or "",
                "message": "The user asked for changes. Revise the plan with their feedback and call plan "
                           "again (action 'create', review true)."}
    tasks = merge_tasks(run.tasks, args)
    run.tasks = tasks
    await scope.mapper.announced(ctx.tool_call_id)
    run.emitter.emit(TasksUpdateEvent(agent_id=scope.agent_id, payload=TasksUpdatePayload.model_validate({"tasks": tasks})))
    if args.review:
        ctx.suspend({"confirmation": {
            "inputType": "plan-review", "severity": "info",
            "message": f"Review the plan{': ' + args.goal if args.goal else ''}",
            "introMessage": args.goal or "Here is the plan. Approve it, or tell me what to change.",
            "tasks": tasks,
        }})
    result: dict[str, Any] = {"tasks": tasks, "progress": _summary(tasks)}
    if args.goal:
        result["goal"] = args.goal
    return result


def plan_tool() -> Tool:
    return Tool(
        "plan",
        "Create or update the task checklist the user sees. Use it for multi-step work: create it first "
        "(review=true to ask the user to approve it), then update task statuses as you go.",
        PlanArgs, plan_handler, resume_schema=ConfirmationAnswer,
    )
