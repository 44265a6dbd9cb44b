"""n8n's execution outcomes given as tool *results* read failed, with the node and n8n's words (issue 26).

The shapes are n8n 2.41.1's (``extractExecutionOutcome`` and ``redactExecuteNodeResult`` in
``modules/instance-ai/instance-ai.adapter.service.js``; the denial of ``executions`` run in
``@n8n/instance-ai`` ``tools/executions.tool.js``). The same shapes come from the real n8n in
``tests/live_n8n/test_failed_node_live.py``.
"""

from __future__ import annotations

from typing import Any

import pytest

from instance_ai_tui.protocol.display_state import display_state
from instance_ai_tui.protocol.transcript import _tool_md
from instance_ai_tui.protocol.tree import ToolCallState


def finished(result: Any) -> ToolCallState:
    return ToolCallState.model_validate({"toolCallId": "t1", "toolName": "executions", "args": {"action": "run"},
                                         "isLoading": False, "result": result,
                                         "startedAt": "2026-11-27T10:00:00Z", "completedAt": "2026-11-27T10:00:01Z"})


FAILED_RUN = {"executionId": "41", "status": "error", "executedNodeNames": ["Start", "Boom"],
              "nodeErrors": [{"nodeName": "Boom", "message": "boom [line 1]"}], "lastNodeExecuted": "Boom",
              "error": "boom [line 1]", "startedAt": "2026-11-27T10:00:00.000Z"}


@pytest.mark.parametrize(("result", "label"), [
    (FAILED_RUN, "failed: the execution failed at node Boom: boom [line 1]"),
    ({**FAILED_RUN, "nodeErrors": [{"nodeName": "A", "message": "first"}, {"nodeName": "B"}]},
     "failed: the execution failed at nodes A, B: first"),
    ({"executionId": "42", "status": "error", "error": "Execution was cancelled"},
     "failed: the execution failed: Execution was cancelled"),
    ({"executionId": "43", "status": "error"}, "failed: the execution failed"),
    ({"status": "error", "error": {"message": "Bad request", "nodeErrorType": "NodeApiError"}},
     "failed: the execution failed: Bad request"),
], ids=["node-errors", "two-nodes", "cancelled", "no-words", "execute-node"])
def test_an_execution_that_failed_is_failed_with_n8ns_words(result: dict[str, Any], label: str) -> None:
    state = display_state(finished(result), run_active=False)
    assert (state.kind, state.label) == ("failed", label)
    assert _tool_md(finished(result), run_active=False)[0] == f"**🔧 executions** ({label})"


@pytest.mark.parametrize(("result", "kind", "label"), [
    ({"executionId": "", "status": "error", "denied": True, "reason": "User denied the action"}, "denied", "denied"),
    ({**FAILED_RUN, "status": "success", "nodeErrors": None, "error": None}, "done", "done"),
    ({"status": "error", "note": "a tool's own field, not an execution"}, "done", "done"),
], ids=["denied-run", "succeeded-run", "other-shape"])
def test_other_outcomes_keep_their_state(result: dict[str, Any], kind: str, label: str) -> None:
    state = display_state(finished(result), run_active=False)
    assert (state.kind, state.label) == (kind, label)
