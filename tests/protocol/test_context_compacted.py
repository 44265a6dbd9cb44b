"""The ``context-compacted`` event (issue 47): one typed event, folded by the one reducer into the agent's
timeline, kept by snapshots, and read in the same words by the TUI's row, ``run``'s line and the
Markdown export."""

from __future__ import annotations

from instance_ai_tui.protocol.events import ContextCompactedEvent, ContextCompactedPayload, parse_event
from instance_ai_tui.protocol.reducer import RunReducer, build_agent_tree_wire
from instance_ai_tui.protocol.transcript import _agent_md
from instance_ai_tui.protocol.tree import AgentNode

WIRE = [
    {"type": "run-start", "runId": "r1", "agentId": "o1", "payload": {"messageId": "m1"}},
    {"type": "text-delta", "runId": "r1", "agentId": "o1", "payload": {"text": "Before."}},
    {"type": "context-compacted", "runId": "r1", "agentId": "o1",
     "payload": {"messages": 12, "runs": ["r0"], "tokensBefore": 5900, "tokensAfter": 1200, "contextWindow": 8192,
                 "reason": "auto"}},
    {"type": "text-delta", "runId": "r1", "agentId": "o1", "payload": {"text": "After."}},
    {"type": "run-finish", "runId": "r1", "agentId": "o1", "payload": {"status": "completed"}},
]


def test_the_event_parses_and_says_itself_in_one_line() -> None:
    event = parse_event(WIRE[2])
    assert isinstance(event, ContextCompactedEvent)
    assert event.payload.words() == "context compacted: 12 older messages became notes (72% → 15% of 8.2k)"
    refused = ContextCompactedPayload(messages=1, tokens_before=2100, tokens_after=900, context_window=2048,
                                      reason="refused", error="the model server failed")
    assert refused.words() == ("context compacted: the model refused a request as too big; 1 older message became "
                               "notes (103% → 44% of 2k) (notes without the model: the model server failed)")


def test_the_reducer_puts_it_in_the_timeline_where_it_happened_and_snapshots_keep_it() -> None:
    tree = build_agent_tree_wire(WIRE)
    kinds = [entry.type for entry in tree.timeline]
    assert kinds == ["text", "context-compacted", "text"]
    again = AgentNode.model_validate(tree.model_dump(mode="json", by_alias=True))
    assert [entry.type for entry in again.timeline] == kinds
    adopted = RunReducer.from_tree(again)
    assert adopted.timeline_entry(adopted.root_id, 1)["tokensAfter"] == 1200


def test_the_export_reads_it_in_the_same_words() -> None:
    lines = _agent_md(build_agent_tree_wire(WIRE), 0)
    assert "*⟲ context compacted: 12 older messages became notes (72% → 15% of 8.2k)*" in lines
    assert lines.index("Before.") < lines.index("*⟲ context compacted: 12 older messages became notes (72% → 15% "
                                                "of 8.2k)*") < lines.index("After.")
