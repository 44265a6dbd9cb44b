"""Running a batch of tool calls: windows of concurrent calls, approval suspension, suspend/resume
payloads, and the tool messages that close a turn. Mixed into ``agent.Agent``."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection, Sequence
from typing import Any

from pydantic import BaseModel, ValidationError

from .chunks import (
    MessageChunk,
    ToolProgressChunk,
    ToolResultChunk,
)
from .events import AgentEvent, EventHub
from .messages import Message
from .run import Resume, Run
from .state import ApprovalDecision, PendingToolCall, SettledToolCall
from .tools import (
    Tool,
    ToolContext,
    ToolError,
    ToolProgress,
    ToolSuspend,
    validation_message,
)

log = logging.getLogger(__name__)


class ToolExecution:
    """The tool-call half of ``Agent`` (its loop calls these)."""

    name: str
    tool_call_concurrency: int
    max_tool_output_chars: int
    require_approval: bool | Collection[str]
    _hub: EventHub

    async def _event(self, run: Run, kind: AgentEvent, **data: Any) -> None:
        raise NotImplementedError

    def _check_cancel(self, run: Run) -> None:
        raise NotImplementedError

    def _suspended(self, run: Run) -> bool:
        raise NotImplementedError

    async def _execute(self, run: Run, ids: Sequence[str]) -> None:
        """Run the not-yet-executed calls among ``ids`` in windows of ``tool_call_concurrency``;
        no new window starts once a call has suspended."""
        todo = [i for i in ids if i in run.pending and not run.pending[i].suspended]
        size = self.tool_call_concurrency
        for start in range(0, len(todo), size):
            if self._suspended(run):
                break
            self._check_cancel(run)
            window = [run.pending[i] for i in todo[start : start + size]]
            if len(window) == 1:
                await self._settle(run, window[0])
            else:
                tasks = [asyncio.ensure_future(self._settle(run, p)) for p in window]
                try:
                    await asyncio.gather(*tasks)
                except BaseException:
                    # (a call that fails the run ends its window: gather alone would leave the siblings
                    # running past the run's end, recording results into a run that is over)
                    for task in tasks:
                        task.cancel()
                    await asyncio.gather(*tasks, return_exceptions=True)
                    raise

    async def _resume_pending(self, run: Run, resume: Resume) -> None:
        target = run.pending[resume.tool_call_id]
        if resume.approval is not None:
            if resume.approval.approved:
                await self._settle(run, target, approved=True)
            else:
                reason = f": {resume.approval.reason}" if resume.approval.reason else ""
                # n8n's shape of a denial (a result, not an error), so every view reads "denied" alike
                self._record(run, target, SettledToolCall(
                    tool_call_id=target.tool_call_id, tool_name=target.tool_name, response_id=target.response_id,
                    result={"success": False, "denied": True, "reason": f"User denied the action{reason}"},
                    error=f"Tool call denied by user{reason}", is_error=True,
                    model_output=f"Error: the tool call was denied by user{reason}. Do not retry it unless the user asks.",
                ))
        else:
            await self._settle(run, target, resume_data=resume.data)
        await self._execute(run, run.batch)

    async def _settle(self, run: Run, pending: PendingToolCall, *, resume_data: Any = None,
                      approved: bool = False) -> None:
        """Run one call; record its outcome (settled or suspended). Never raises but for cancel."""
        tool = run.tools.get(pending.tool_name)

        def fail(message: str) -> None:
            self._record(run, pending, SettledToolCall(
                tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, response_id=pending.response_id,
                error=message, is_error=True, model_output=f"Error: {message}",
            ))

        if tool is None:
            fail(f"unknown tool {pending.tool_name!r}; available tools: {', '.join(sorted(run.tools)) or 'none'}")
            return
        if pending.args_error:
            fail(pending.args_error)
            return
        try:
            args = tool.validate_args(pending.args)
        except ValidationError as exc:
            fail(validation_message(exc))
            return
        ctx = ToolContext(
            run_id=run.run_id, tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, agent_name=self.name,
            thread_id=run.thread_id, resume_data=resume_data,
            suspend_payload=pending.suspend_payload if resume_data is not None else None,
            approved=approved, cancel=run.cancel, extra=run.extra, _usage_sink=run.add_sub_usage,
            _progress_sink=_progress_to(run, pending.response_id),
        )
        if not approved and resume_data is None and await self._needs_approval(tool, args, ctx):
            message = tool.approval_message
            text = message(args) if callable(message) else (message or f"Allow {tool.name} to run?")
            pending.suspended = True
            pending.kind = "approval"
            pending.suspend_payload = {"type": "approval", "toolName": tool.name, "args": pending.args, "message": text}
            preview = await approval_preview(tool, args, ctx)
            if preview:
                pending.suspend_payload["preview"] = preview
            pending.resume_schema = ApprovalDecision.model_json_schema()
            pending.announced = False
            return
        await self._event(run, AgentEvent.TOOL_EXECUTION_START, tool_call_id=pending.tool_call_id,
                          tool_name=tool.name, args=pending.args)
        try:
            result = await tool.invoke(args, ctx)
        except ToolSuspend as suspend:
            try:
                payload = jsonable(tool.check_suspend_payload(suspend.payload))
            except ValidationError as exc:
                fail(f"the tool suspended with an invalid payload: {validation_message(exc)}")
                return
            pending.suspended = True
            pending.kind = "suspend"
            pending.suspend_payload = payload
            pending.resume_schema = tool.resume_json_schema
            pending.announced = False
            return
        except ToolError as exc:
            await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                              tool_name=tool.name, result=str(exc), is_error=True)
            fail(str(exc))
            return
        except Exception as exc:  # a failing tool is an error result, never a failed run
            log.debug("tool %s failed", tool.name, exc_info=True)
            message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
            await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                              tool_name=tool.name, result=message, is_error=True)
            fail(message)
            return
        await self._event(run, AgentEvent.TOOL_EXECUTION_END, tool_call_id=pending.tool_call_id,
                          tool_name=tool.name, result=result, is_error=False)
        try:
            output = tool.model_output(result, self.max_tool_output_chars)
        except Exception as exc:  # noqa: BLE001 - a tool's odd result becomes a tool error, not a failed run
            fail(f"the tool's result could not be converted for the model: {exc}")
            return
        self._record(run, pending, SettledToolCall(
            tool_call_id=pending.tool_call_id, tool_name=pending.tool_name, response_id=pending.response_id,
            result=jsonable(result), model_output=output,
        ))

    async def _needs_approval(self, tool: Tool, args: BaseModel, ctx: ToolContext) -> bool:
        policy = self.require_approval
        if policy is True or (not isinstance(policy, bool) and tool.name in policy):
            return True
        return await tool.requires_approval(args, ctx)

    def _record(self, run: Run, pending: PendingToolCall, settled: SettledToolCall) -> None:
        run.pending.pop(pending.tool_call_id, None)
        run.settled[settled.tool_call_id] = settled
        run.emit(ToolResultChunk(
            run.run_id, settled.response_id, settled.tool_call_id, settled.tool_name, settled.result,
            settled.error, settled.is_error, settled.skipped, settled.model_output,
        ))

    async def _close_batch(self, run: Run, *, turn_end: bool = True) -> None:
        """Append the batch's tool messages in call order and end the turn."""
        messages: list[Message] = []
        for call_id in run.batch:
            s = run.settled.pop(call_id, None)
            if s is None:
                continue
            messages.append(Message.tool(
                call_id, s.tool_name, s.model_output, result=s.result, is_error=s.is_error, skipped=s.skipped,
                response_id=s.response_id, agent=self.name,
            ))
        run.list.add_response(messages)
        for m in messages:
            run.emit(MessageChunk(run.run_id, m.response_id or run.rid(), m.model_dump(mode="json", exclude_none=True)))
        run.batch = []
        if turn_end and self._hub.has(AgentEvent.TURN_END):
            assistant = next((m for m in reversed(run.list.messages) if m.role == "assistant"), None)
            await self._event(run, AgentEvent.TURN_END, message=assistant,
                              tool_results=[m.model_dump(mode="json") for m in messages])

    def _settle_unfinished(self, run: Run, text: str) -> None:
        for call_id in run.batch:
            if call_id in run.settled:
                continue
            pending = run.pending.get(call_id)
            self._record(run, pending or PendingToolCall(tool_call_id=call_id, tool_name=""), SettledToolCall(
                tool_call_id=call_id, tool_name=pending.tool_name if pending else "",
                response_id=pending.response_id if pending else run.rid(),
                skipped=True, model_output=text, result=None,
            ))
        run.pending.clear()


async def approval_preview(tool: Tool, args: Any, ctx: ToolContext) -> dict[str, Any] | None:
    """What the call would change, for its approval card. Best effort: a preview that fails
    (or takes over 5 s) is left out, and the user still decides on the arguments."""
    if tool.approval_preview is None:
        return None
    try:
        preview = await asyncio.wait_for(tool.approval_preview(args, ctx), 5.0)
    except Exception:
        log.debug("the approval preview of %s failed", tool.name, exc_info=True)
        return None
    return jsonable(preview) if preview else None


def jsonable(value: Any) -> Any:
    """The value as JSON-compatible data (pydantic models dumped; unknown objects as text)."""
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json")
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    if isinstance(value, dict):
        return {str(k): jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [jsonable(v) for v in value]
    return str(value)




def _progress_to(run: Run, response_id: str) -> Callable[[ToolProgress], None]:
    """A tool's progress as ``tool-progress`` chunks of its run (after its ``tool-call`` chunk: the
    call was queued before it ran). Nothing once the run has ended."""

    def sink(progress: ToolProgress) -> None:
        if run.status == "running":
            run.emit(ToolProgressChunk(run.run_id, response_id, progress.tool_call_id, progress.tool_name,
                                       progress.progress, progress.total, progress.text))

    return sink
