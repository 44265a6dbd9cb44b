"""Memory on the SQLite store: persistence, titles, working memory, recall, orphans, ordering."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.memory import (
    HashingEmbedder,
    StoreMemory,
    message_to_record,
    record_to_message,
    sanitize_title,
)
from instance_ai_tui.runtime.messages import Message, ToolCallPart
from instance_ai_tui.runtime.tools import tool
from tests.support.openai_server import MockResponse, MockToolCall


def is_title_request(body: dict) -> bool:
    return body["messages"][0]["content"].startswith("You write short titles")


async def test_turns_are_persisted_and_reloaded(server, make_model, store):
    server.set_script([MockResponse(text="Hi Ada."), MockResponse(text="You are Ada.")])
    agent = Agent("main", "x", make_model(), memory=StoreMemory(store))
    first = await agent.generate("My name is Ada.", thread_id="t1")
    assert first.status == "success"
    second = await agent.generate("Who am I?", thread_id="t1")
    assert second.text == "You are Ada."
    assert [(m["role"], m["content"]) for m in server.requests[1].body["messages"][1:]] == [
        ("user", "My name is Ada."), ("assistant", "Hi Ada."), ("user", "Who am I?")]
    records = await store.list_messages("t1")
    assert [r.role for r in records] == ["user", "assistant", "user", "assistant"]
    assert records[1].data["agent"] == "main" and records[1].run_id == first.run_id
    assert record_to_message(records[1]).text == "Hi Ada."


async def test_title_generated_after_the_first_substantial_exchange(server, make_model, store):
    def script(body: dict) -> MockResponse:
        if is_title_request(body):
            return MockResponse(text='{"title": "Weather report for Paris."}', prompt_tokens=30, completion_tokens=8)
        return MockResponse(text="Sure.")

    server.set_script(script)
    agent = Agent("main", "x", make_model(), memory=StoreMemory(store, title_generation=True))
    await agent.generate("hi", thread_id="t1")
    await agent.wait_background()
    assert not any(is_title_request(r.body) for r in server.requests)  # trivial message: no title yet
    await agent.generate("Can you send me the weather in Paris every morning?", thread_id="t1")
    await agent.wait_background()
    thread = await store.get_thread("t1")
    assert thread is not None and thread.title == "Weather report for Paris"
    title_request = next(r.body for r in server.requests if is_title_request(r.body))
    assert "weather in Paris every morning" in title_request["messages"][1]["content"]
    assert agent.side_usage.input_tokens == 30 and agent.side_usage.output_tokens == 8
    # a thread with a title keeps it
    await agent.generate("And also the forecast for Berlin next week please?", thread_id="t1")
    await agent.wait_background()
    assert sum(is_title_request(r.body) for r in server.requests) == 1


def test_title_sanitising():
    assert sanitize_title('```json\n{"title": "Daily **Slack** digest!"}\n```') == "Daily Slack digest"
    assert sanitize_title("<think>hmm</think>Title: \"Fix the build\".") == "Fix the build"
    assert sanitize_title("   ") is None
    assert len(sanitize_title("word " * 40) or "") <= 81


async def test_working_memory_tool_and_system_prompt(server, make_model, store):
    server.set_script([
        MockResponse.call("update_working_memory", {"memory": "- Name: Ada\n- Likes: tea"}),
        MockResponse(text="Noted."),
        MockResponse(text="You like tea."),
    ])
    memory = StoreMemory(store, working_memory=True)
    agent = Agent("main", "Be helpful.", make_model(), memory=memory)
    result = await agent.generate("I'm Ada and I like tea.", thread_id="t1")
    assert result.status == "success"
    first_system = server.requests[0].body["messages"][0]["content"]
    assert first_system.startswith("Be helpful.") and "## Working Memory" in first_system and "- Name:" in first_system
    assert "update_working_memory" in [t["function"]["name"] for t in server.requests[0].body["tools"]]
    assert "- Name: Ada\n- Likes: tea" in server.requests[1].body["messages"][0]["content"]
    assert await memory.get_working_memory("t1") == "- Name: Ada\n- Likes: tea"
    # a new agent (a new process, say) sees it in the next turn
    agent2 = Agent("main", "Be helpful.", make_model(), memory=StoreMemory(store, working_memory=True))
    await agent2.generate("What do I like?", thread_id="t1")
    assert "Likes: tea" in server.requests[2].body["messages"][0]["content"]
    # no thread: no working-memory tool
    server.set_script([MockResponse(text="ok")])
    await agent.generate("hi")
    assert "tools" not in server.requests[3].body


async def test_semantic_recall_adds_similar_older_messages(server, make_model, store):
    server.set_script([MockResponse(text=f"answer {i}") for i in range(4)])
    memory = StoreMemory(store, last_messages=2, embedder=HashingEmbedder(), recall_top_k=1, recall_min_score=0.3,
                         observe_overflow=False)  # a sliding window: what leaves it is found by recall
    agent = Agent("main", "x", make_model(), memory=memory)
    await agent.generate("My favourite animal is the purple elephant from Kerala", thread_id="t1")
    await agent.generate("Let us talk about compilers and parsers", thread_id="t1")
    await agent.generate("What about register allocation in compilers", thread_id="t1")
    await agent.generate("Tell me again about the purple elephant", thread_id="t1")
    sent = [m.get("content") for m in server.requests[3].body["messages"]]
    assert "My favourite animal is the purple elephant from Kerala" in sent  # recalled, outside the window
    assert "Let us talk about compilers and parsers" not in sent
    assert sent[-1] == "Tell me again about the purple elephant"


async def test_orphaned_tool_messages_in_history_are_stripped(server, make_model, store):
    ms = 1_700_000_000_000
    history = [
        Message(id="u1", role="user", content="delete it", created_at=ms),
        Message(id="a1", role="assistant", content="", created_at=ms + 1,
                tool_calls=[ToolCallPart(id="gone", name="delete_file", arguments={"path": "/x"})]),
        Message(id="t0", role="tool", tool_call_id="never-called", tool_name="x", content="stray", created_at=ms + 2),
        Message(id="a2", role="assistant", content="Let me check first.", created_at=ms + 3,
                tool_calls=[ToolCallPart(id="lost", name="ls", arguments={})]),
    ]
    await store.create_thread("t1")
    await store.upsert_messages("t1", [message_to_record("t1", m, "old-run") for m in history])
    server.set_script([MockResponse(text="fine")])
    await Agent("main", "x", make_model(), memory=StoreMemory(store)).generate("continue", thread_id="t1")
    sent = server.requests[0].body["messages"]
    assert sent == [
        {"role": "system", "content": "x"},
        {"role": "user", "content": "delete it"},
        {"role": "assistant", "content": "Let me check first."},
        {"role": "user", "content": "continue"},
    ]


async def test_created_at_is_strictly_monotonic_when_stored(server, make_model, store):
    @tool
    async def ping(n: int) -> int:
        "Ping."
        return n

    server.set_script([
        MockResponse(tool_calls=[MockToolCall(name="ping", arguments={"n": i}) for i in range(6)]),
        MockResponse(text="pong"),
    ])
    # history written "in the future" (clock skew): live messages still come after it
    future = datetime(2100, 1, 1, tzinfo=UTC)
    await store.create_thread("t1")
    old = Message(id="old", role="user", content="from the future")
    await store.upsert_messages("t1", [message_to_record("t1", old, None).model_copy(update={"created_at": future})])
    agent = Agent("main", "x", make_model(), [ping], memory=StoreMemory(store), tool_call_concurrency=6)
    await agent.generate(["one", "two"], thread_id="t1")
    records = await store.list_messages("t1")
    assert [r.role for r in records] == ["user"] * 3 + ["assistant"] + ["tool"] * 6 + ["assistant"]
    stamps = [r.created_at for r in records]
    assert all(a < b for a, b in itertools.pairwise(stamps)), stamps
    assert stamps[0] == future


async def test_the_context_of_a_run_reads_a_page_not_the_whole_thread(store):
    """Issue 14 item 7: the newest ``last_messages`` come from a page read from the newest (the same
    window as filtering the whole thread), also when superseded runs (a rewind) sit in the newest page."""
    from instance_ai_tui.runtime.memory import mark_superseded

    def run(index: int) -> list[Message]:
        call = f"c{index}"
        return [Message.user(f"q{index}"),
                Message.assistant("", tool_calls=[ToolCallPart(id=call, name="t", arguments={})]),
                Message.tool(call, "t", "{}"), Message.assistant(f"a{index}")]

    for index in range(300):
        await store.upsert_messages("t1", [message_to_record("t1", m, f"r{index}") for m in run(index)])
    asked: list[int | None] = []
    real = store.list_messages

    async def counting(thread_id: str, last: int | None = None):  # type: ignore[no-untyped-def]
        asked.append(last)
        return await real(thread_id, last)

    store.list_messages = counting  # type: ignore[method-assign]
    memory = StoreMemory(store, last_messages=10)

    async def expected() -> list[str]:  # the old way: the whole thread, filtered, then cut
        records = await real("t1")
        gone = {f"r{i}" for i in range(290, 300)} if superseded else set()
        kept = [record_to_message(r) for r in records if r.run_id not in gone][-10:]
        while kept and kept[0].role == "tool":
            kept.pop(0)
        return [m.text or m.role for m in kept]

    superseded = False
    assert [m.text or m.role for m in await memory.load_history("t1")] == await expected()
    assert asked == [10]  # one page of 10 rows, not 1,200
    asked.clear()
    await mark_superseded(store, "t1", [f"r{i}" for i in range(290, 300)])  # the newest 40 are rewound away
    superseded = True
    history = await memory.load_history("t1")
    assert [m.text or m.role for m in history] == await expected()
    assert history[-1].text == "a289" and asked == [10, 40, 160] and all(a is not None for a in asked)
