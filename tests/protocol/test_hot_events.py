"""The fast path for deltas is never wider than the validation.

``is_plain_hot_event`` lets ``protocol.ingest.decode`` type a delta as a ``DeltaRun`` without
validating it into a model. It must accept only what ``parse_event`` accepts, with the same values;
anything malformed must go on to ``parse_event`` and be rejected there with its own error, as
without the fast path.
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.client.remote import RemoteClient
from instance_ai_tui.client.sse import SseFrame
from instance_ai_tui.protocol.events import EventParseError, parse_event
from instance_ai_tui.protocol.hot_events import is_plain_hot_event, loads
from instance_ai_tui.protocol.ingest import DeltaRun, StreamItem, decode
from tests.support.fold import apply_wire

GOOD = {"type": "text-delta", "runId": "r1", "agentId": "a1", "responseId": "resp", "payload": {"text": "Hi"}}

MALFORMED: list[dict[str, Any]] = [
    {**GOOD, "payload": {"text": 5}},
    {**GOOD, "payload": {"text": None}},
    {**GOOD, "payload": {"text": ["a"]}},
    {**GOOD, "payload": "Hi"},
    {**GOOD, "payload": None},
    {**GOOD, "runId": 7},
    {**GOOD, "runId": None},
    {**GOOD, "agentId": ["a"]},
    {**GOOD, "responseId": 0},
    {**GOOD, "responseId": False},
    {**GOOD, "userId": 12},
    {**GOOD, "ts": "noon"},
    {**GOOD, "ts": [1]},
    {**GOOD, "type": "status", "payload": {"message": 1}},
    {**GOOD, "type": "reasoning-delta", "payload": {"text": {"a": 1}}},
]


@pytest.mark.parametrize("data", MALFORMED, ids=[json.dumps(d)[:60] for d in MALFORMED])
def test_a_malformed_hot_event_is_not_taken_and_parse_event_rejects_it(data: dict[str, Any]) -> None:
    assert not is_plain_hot_event(data)
    with pytest.raises(EventParseError) as decoded:
        decode(1, data)
    with pytest.raises(EventParseError) as parsed:
        parse_event(data)
    assert str(decoded.value) == str(parsed.value)


@pytest.mark.parametrize("data", MALFORMED, ids=[json.dumps(d)[:60] for d in MALFORMED])
def test_the_remote_client_skips_a_malformed_hot_frame_with_the_validations_own_words(data: dict[str, Any]) -> None:
    client = RemoteClient("http://127.0.0.1:9")
    seen: list[str] = []
    client._diagnose = seen.append  # type: ignore[method-assign]
    assert client.batch_of([SseFrame(data=json.dumps(data), id=4, raw_id="4")], 0).items == []
    with pytest.raises(EventParseError) as raised:
        parse_event(data)
    assert seen == [f"skipped malformed frame (id 4): {raised.value}"]


def test_an_unhashable_type_is_refused_not_raised() -> None:
    data = {**GOOD, "type": ["text-delta"]}
    assert not is_plain_hot_event(data)
    with pytest.raises(EventParseError):
        decode(1, data)


@pytest.mark.parametrize("data", [
    {**GOOD, "extra": 1},  # kept by the model as an extra field: the full path keeps it
    {**GOOD, "run_id": 3},  # a snake_case name beside the wire name: the model keeps it as an extra
    {**GOOD, "payload": {"text": "Hi", "more": True}},
    {**GOOD, "ts": True},
])
def test_valid_but_unusual_hot_events_take_the_full_path(data: dict[str, Any]) -> None:
    assert not is_plain_hot_event(data)
    item = decode(1, data)
    assert type(item) is StreamItem and item == StreamItem(1, parse_event(data))


_json_scalars = st.none() | st.booleans() | st.integers(-3, 3) | st.floats(allow_nan=False) | st.text(max_size=3)
_json_values = st.recursive(_json_scalars, lambda inner: st.lists(inner, max_size=2)
                            | st.dictionaries(st.text(max_size=3), inner, max_size=2), max_leaves=4)
_keys = st.sampled_from(["type", "runId", "agentId", "userId", "responseId", "ts", "payload", "run_id", "x"])
_payloads = st.dictionaries(st.sampled_from(["text", "message", "other"]), _json_values, max_size=2) | _json_values


@st.composite
def hot_like_events(draw: st.DrawFn) -> dict[str, Any]:
    """Hot events with some fields replaced by arbitrary JSON values."""
    data: dict[str, Any] = {
        "type": draw(st.sampled_from(["text-delta", "reasoning-delta", "status"])),
        "runId": "r1", "agentId": "a1", "payload": draw(_payloads),
    }
    for key in draw(st.lists(_keys, max_size=4)):
        data[key] = draw(_json_values | st.text(max_size=3))
    return data


@settings(max_examples=600, deadline=None)
@given(hot_like_events())
def test_the_fast_check_accepts_only_what_parse_event_accepts_with_the_same_values(data: dict[str, Any]) -> None:
    try:
        event = parse_event(data)
    except EventParseError:
        assert not is_plain_hot_event(data)
        return
    if is_plain_hot_event(data):
        field = "message" if data["type"] == "status" else "text"
        assert event.type == data["type"] and event.run_id == data.get("runId", "")
        assert event.agent_id == data.get("agentId", "") and event.response_id == data.get("responseId")
        assert getattr(event.payload, field) == data["payload"].get(field, "")
        assert not event.model_extra and not event.payload.model_extra  # nothing a fold of the dict would miss
        item = decode(3, data)
        if data["type"] != "status":  # (a delta typed without a model, with the model's values)
            assert type(item) is DeltaRun and item.ids == [3] and item.all_texts() == [event.payload.text]
            assert item.key == (event.type, event.run_id, event.agent_id, event.response_id)


_texts = st.one_of(
    st.text(max_size=12),
    st.builds(json.dumps, _json_values),
    st.builds(lambda v, pad: pad + json.dumps(v) + pad, _json_values, st.sampled_from([" ", "\n", ""])),
    st.sampled_from(['{"a":1}x', '{"a":1} ', '{"a":', '{"a":1}}', "{}", '{"a":NaN}', '{"a":"\\ud800"}', "{\"a\":1,}"]),
)


@settings(max_examples=600, deadline=None)
@given(_texts)
def test_loads_is_json_loads(text: str) -> None:
    try:
        expected: Any = json.loads(text)
    except ValueError as exc:
        with pytest.raises(type(exc)) as raised:
            loads(text)
        assert str(raised.value) == str(exc)
        return
    got = loads(text)
    assert json.dumps(got, sort_keys=True) == json.dumps(expected, sort_keys=True)


@pytest.mark.parametrize("data", MALFORMED, ids=[json.dumps(d)[:60] for d in MALFORMED])
def test_the_fold_drops_a_malformed_hot_event_with_the_validations_words(data: dict[str, Any]) -> None:
    from instance_ai_tui.protocol.conversation import Conversation

    conv = Conversation("t")
    assert apply_wire(conv, 1, {"type": "run-start", "runId": "r1", "agentId": "a1", "payload": {"messageId": "m"}})
    assert apply_wire(conv, 2, {**GOOD, "payload": {"text": "Hi"}})
    with pytest.raises(EventParseError) as raised:
        parse_event(data)
    assert apply_wire(conv, 3, data) is False
    assert conv.diagnostics[-1] == str(raised.value)
    reducer = conv.messages[-1].reducer
    assert reducer is not None and reducer.text("a1") == "Hi"  # nothing of it folded
