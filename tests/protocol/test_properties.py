"""Property tests: the parser and the reducer never raise; replay equivalence holds.

Together these run well over 2,000 random event sequences.
"""

from __future__ import annotations

import json
from typing import Any

from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from instance_ai_tui.protocol.conversation import Conversation
from instance_ai_tui.protocol.events import EventParseError, parse_event
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.protocol.sse import EventStreamDecoder

from .strategies import event_streams, events

def SETTINGS(examples: int) -> settings:
    return settings(
        max_examples=examples, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
    )


def fold(stream: list[Any], reducer: RunReducer | None = None) -> RunReducer:
    reducer = reducer or RunReducer()
    for event in stream:
        reducer.apply(event)
    return reducer


def resume(stream: list[Any], split: int) -> RunReducer:
    """Fold the head, hand over only its tree (+ root aliases and run status), fold the rest."""
    head = fold(stream[:split])
    snapshot = json.loads(head.tree().to_json())  # as it would travel in a run-sync frame
    resumed = RunReducer.from_tree(snapshot, aliases=head.aliases, status=head.status)
    return fold(stream[split:], resumed)


@SETTINGS(1200)
@given(stream=event_streams)
def test_parser_reducer_and_conversation_never_raise(stream: list[Any]) -> None:
    for item in stream:
        try:
            parse_event(item)
        except EventParseError:
            pass
    reducer = fold(stream)
    tree = reducer.tree()  # always a valid tree
    assert tree.to_wire()["agentId"]
    reducer.drain_changes()
    conversation = Conversation()
    for index, item in enumerate(stream):
        conversation.apply(index if index % 3 else None, item)
        if index % 5 == 0:
            conversation.drain_changes()
    conversation.pending_confirmations()
    for message in conversation.messages:
        message.to_message()


@SETTINGS(300)
@given(stream=event_streams, newline=st.sampled_from(["\n", "\r\n"]), chunk=st.integers(1, 64))
def test_sse_round_trip_of_random_streams(stream: list[Any], newline: str, chunk: int) -> None:
    """Events written as SSE frames and read back in arbitrary chunks fold to the same tree."""
    parts = []
    for index, item in enumerate(stream):
        parts.append(f"id: {index + 1}{newline}data: {json.dumps(item)}{newline}{newline}")
    raw = "".join(parts).encode()
    decoder = EventStreamDecoder(raw_events=True)
    items = []
    for start in range(0, len(raw), chunk):
        items.extend(decoder.feed(raw[start : start + chunk]))
    items.extend(decoder.close())
    direct = fold(stream).tree()
    via_sse = fold([item for _, item in items]).tree()
    assert direct == via_sse


@SETTINGS(1000)
@given(data=st.data(), stream=event_streams)
def test_replay_equivalence_split_anywhere(data: st.DataObject, stream: list[Any]) -> None:
    split = data.draw(st.integers(0, len(stream)), label="split")
    whole = fold(stream)
    resumed = resume(stream, split)
    assert resumed.tree().to_wire() == whole.tree().to_wire()
    assert resumed.status == whole.status


def test_replay_equivalence_is_not_vacuous() -> None:
    """The generated streams do reach the interesting cases: find one of each, and check
    that the property fails if the hand-over drops state it needs."""

    def nontrivial(stream: list[Any]) -> bool:
        tree = fold(stream).tree()
        return bool(tree.children and tree.children[0].tool_calls and tree.text_content and tree.status != "active")

    find(event_streams, nontrivial, settings=settings(max_examples=20_000, deadline=None, database=None))

    def block_replaces_across_split(stream: list[Any]) -> bool:
        # a block arriving after the split replaces text streamed before it
        for split in range(1, len(stream)):
            head = fold(stream[:split]).tree()
            tail_types = [e.get("type") for e in stream[split:] if isinstance(e, dict)]
            if "text-block" in tail_types and head.timeline and head.timeline[-1].type == "text" and head.timeline[-1].content:
                whole = fold(stream).tree()
                if len(whole.text_content) < len(head.text_content) + sum(
                    len(e["payload"]["text"]) for e in stream[split:] if isinstance(e, dict) and e.get("type") == "text-block"
                ):
                    return True
        return False

    find(event_streams, block_replaces_across_split, settings=settings(max_examples=50_000, deadline=None, database=None))

    def aliases_matter(stream: list[Any]) -> bool:
        # handing over the tree without the root aliases would change the result
        for split in range(1, len(stream)):
            head = fold(stream[:split])
            if not head.aliases:
                continue
            broken = fold(stream[split:], RunReducer.from_tree(head.tree(), status=head.status))
            if broken.tree() != fold(stream).tree():
                return True
        return False

    find(event_streams, aliases_matter, settings=settings(max_examples=50_000, deadline=None, database=None))


def test_event_strategy_mixes_valid_malformed_and_unknown() -> None:
    kinds: dict[str, int] = {"valid": 0, "unknown": 0, "malformed": 0}

    @settings(max_examples=400, deadline=None, database=None)
    @given(item=events)
    def classify(item: Any) -> None:
        try:
            event = parse_event(item)
        except EventParseError:
            kinds["malformed"] += 1
            return
        kinds["unknown" if type(event).__name__ == "UnknownEvent" else "valid"] += 1

    classify()
    assert all(count > 10 for count in kinds.values()), kinds
