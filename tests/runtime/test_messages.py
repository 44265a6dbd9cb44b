"""The message list: provenance sets, views, serialisation, orphans, monotonic createdAt."""

from __future__ import annotations

import itertools
import json

from instance_ai_tui.runtime.messages import Message, MessageList, ToolCallPart, strip_orphaned_tool_messages


def call(call_id: str, text: str = "") -> Message:
    return Message(role="assistant", content=text, tool_calls=[ToolCallPart(id=call_id, name="t", arguments={"a": 1})])


def result(call_id: str) -> Message:
    return Message.tool(call_id, "t", "ok")


def test_sets_and_views():
    lst = MessageList()
    lst.add_history([Message.user("old", created_at=1000), Message.assistant("old answer", created_at=1001)])
    [question] = lst.add_input([Message.user("new")])
    lst.add_response([call("c1"), result("c1"), Message.assistant("done")])
    lst.add_response([Message(role="custom", data={"card": 1})])
    assert [m.text for m in lst.turn_delta()][:2] == ["new", ""]
    assert len(lst.turn_delta()) == 5 and lst.turn_delta()[0] is question
    assert [m.role for m in lst.response_delta()] == ["assistant", "tool", "assistant", "custom"]
    llm = lst.for_llm("system text", ["## Working Memory\nx"])
    assert llm[0] == {"role": "system", "content": "system text\n\n## Working Memory\nx"}
    assert [m["role"] for m in llm] == ["system", "user", "assistant", "user", "assistant", "tool", "assistant"]
    assert llm[4]["content"] == "" and llm[4]["tool_calls"][0]["function"]["arguments"] == '{"a": 1}'


def test_serialize_round_trip_keeps_the_sets_and_the_clock():
    lst = MessageList()
    lst.add_history([Message.user("h", created_at=5000)])
    lst.add_input([Message.user("i")])
    lst.add_response([Message.assistant("r")])
    data = json.loads(json.dumps(lst.serialize()))
    back = MessageList.deserialize(data)
    assert [m.id for m in back.turn_delta()] == [m.id for m in lst.turn_delta()]
    assert [m.id for m in back.response_delta()] == [m.id for m in lst.response_delta()]
    assert back.history_ids == lst.history_ids
    before = max(m.created_at for m in back.messages)
    [later] = back.add_response([Message.assistant("after resume", created_at=1)])
    assert later.created_at == before + 1


def test_created_at_strictly_increasing_even_within_one_millisecond():
    lst = MessageList()
    lst.add_history([Message.user("future", created_at=10**13)])
    added = lst.add_input([Message.user(str(i)) for i in range(50)])
    stamps = [m.created_at for m in lst.messages]
    assert all(a < b for a, b in itertools.pairwise(stamps))
    assert added[0].created_at == 10**13 + 1


def test_strip_orphans():
    messages = [
        Message.user("u"),
        call("answered", "text stays"),
        result("answered"),
        call("orphan"),  # no result: dropped entirely (no text)
        Message(role="assistant", content="keep my text",
                tool_calls=[ToolCallPart(id="half", name="t"), ToolCallPart(id="lost", name="t")]),
        result("half"),
        result("nobody"),  # result without call: dropped
    ]
    out = strip_orphaned_tool_messages(messages)
    assert [(m.role, m.text) for m in out] == [("user", "u"), ("assistant", "text stays"), ("tool", "ok"),
                                               ("assistant", "keep my text"), ("tool", "ok")]
    assert [tc.id for tc in out[3].tool_calls] == ["half"]
    assert messages[4].tool_calls and len(messages[4].tool_calls) == 2  # input untouched
    # a result before its call is an orphan too
    assert strip_orphaned_tool_messages([result("x"), call("x")]) == []


def test_reasoning_replay_is_opt_in():
    m = Message(role="assistant", content="", reasoning="because", tool_calls=[ToolCallPart(id="c", name="t")])
    assert "reasoning_content" not in m.to_openai()
    assert m.to_openai(replay_reasoning=True)["reasoning_content"] == "because"
