"""The context budget (``runtime/context.py``): windows, the estimate and its correction, fitting a
request, and what servers' refusals say."""

from __future__ import annotations

import json
from typing import Any

import hypothesis.strategies as st
import pytest
from hypothesis import given, settings

from instance_ai_tui.runtime.context import (
    CHARS_PER_TOKEN,
    DEFAULT_WINDOW,
    STUB_OVER,
    STUB_SIZE,
    ContextBudget,
    Fit,
    Sizes,
    context_refusal,
    fit_request,
    format_tokens,
    known_window,
    raw_tokens,
    wire_chars,
)
from instance_ai_tui.runtime.errors import ModelContextExceeded
from instance_ai_tui.runtime.messages import Message, MessageList, ToolCallPart


def turn(index: int, result_chars: int = 0) -> list[dict[str, Any]]:
    call = f"call_{index}"
    out: list[dict[str, Any]] = [{"role": "user", "content": f"question {index}"}]
    if result_chars:
        out += [{"role": "assistant", "content": "", "tool_calls": [
                    {"id": call, "type": "function", "function": {"name": "get-workflow",
                                                                  "arguments": json.dumps({"id": f"wf_{index}"})}}]},
                {"role": "tool", "tool_call_id": call, "content": f"{{\"id\": \"wf_{index}\"}}" + "x" * result_chars}]
    out.append({"role": "assistant", "content": f"answer {index}"})
    return out


def conversation(turns: int, result_chars: int = 0, current: str = "and now?") -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."}]
    for index in range(turns):
        messages += turn(index, result_chars)
    messages.append({"role": "user", "content": current})
    return messages


def test_windows_come_from_config_then_the_table_then_8k() -> None:
    assert known_window("gpt-4o-mini") == (128_000, "table")
    assert known_window("openrouter/qwen2.5-coder", {"qwen2.5": 4_096}) == (4_096, "config")
    assert known_window("my-local-model") is None
    assert ContextBudget("my-local-model").window == DEFAULT_WINDOW
    assert format_tokens(8_192) == "8.2k" and format_tokens(128_000) == "128k" and format_tokens(2_048) == "2k"


def test_a_window_learned_from_a_refusal_outranks_the_rest_and_only_shrinks() -> None:
    budget = ContextBudget("smollm2")
    assert (budget.window, budget.source) == (8_192, "table")
    assert budget.set_window(16_000, "server") and budget.window == 16_000
    assert not budget.set_window(4_000, "config")  # the server's word outranks the config's
    assert budget.set_window(2_048, "learned") and budget.window == 2_048
    assert not budget.set_window(4_096, "learned") and not budget.set_window(32_000, "server")


def test_the_estimate_is_corrected_from_real_usage() -> None:
    budget = ContextBudget("m", window=8_192)
    budget.calibrate(1_000, 1_400)
    assert budget.ratio == pytest.approx(1.4)
    budget.calibrate(1_000, 1_000)  # lower: it comes down slowly (a wrong low ratio would overflow)
    assert budget.ratio == pytest.approx(1.32)
    budget.calibrate(1_000, 1_500)  # higher: at once
    assert budget.ratio == pytest.approx(1.5)
    budget.calibrate(10, 1_000)  # too small to say anything
    assert budget.ratio == pytest.approx(1.5)


def test_a_request_that_fits_is_sent_as_it_is() -> None:
    messages = conversation(3)
    fit = fit_request(messages, [], ContextBudget("m", window=8_192), {}, Sizes())
    assert fit.messages == messages and (fit.stubbed, fit.dropped, fit.cut) == (0, 0, 0)
    assert fit.tokens <= fit.available


def test_older_tool_results_become_stubs_before_any_turn_leaves() -> None:
    budget = ContextBudget("m", window=8_192)
    messages = conversation(6, result_chars=4_000)
    fit = fit_request(messages, [], budget, {}, Sizes())
    assert fit.tokens <= fit.available and fit.dropped == 0 and fit.stubbed >= 1
    stub = next(m for m in fit.messages if m.get("role") == "tool")["content"]
    assert stub.startswith("[older result of get-workflow(") and "wf_0" in stub and "characters" in stub
    assert messages == conversation(6, result_chars=4_000)  # the given dicts are never changed


def test_a_giant_of_this_turn_is_cut_to_half_the_room_before_any_older_turn_leaves() -> None:
    budget = ContextBudget("m", window=2_048)
    paste = "line of a long paste\n" * 2_000
    fit = fit_request(conversation(8, current=paste), [], budget, {"max_tokens": 256}, Sizes())
    assert fit.tokens <= fit.available <= 2_048 - 256
    assert fit.dropped == 0 and fit.cut == 1
    assert fit.available / 3 < budget.tokens(len(fit.messages[-1]["content"]) / 3.5) <= fit.available / 2 + 10


def test_the_oldest_turns_leave_whole_then_the_current_turn_is_cut() -> None:
    budget = ContextBudget("m", window=2_048)
    paste = "line of a long paste\n" * 2_000
    messages = conversation(200, result_chars=0, current=paste)
    fit = fit_request(messages, [], budget, {"max_tokens": 256}, Sizes())
    assert fit.tokens <= fit.available <= 2_048 - 256
    assert fit.dropped > 0 and fit.cut >= 1
    sent = fit.messages
    assert sent[0]["role"] == "system" and sent[1]["role"] == "user"  # whole turns left
    assert "characters cut here to fit the model's context" in sent[-1]["content"]
    assert sent[-1]["content"].startswith("line of a long paste")


def test_a_request_over_a_guessed_window_is_sent_as_it_is() -> None:
    """An unknown model's 8 k is a guess: nothing is left out of a request over it and it is not stopped
    (the server says whether it fits, and its refusal teaches the real window); a known window is
    enforced (the next tests)."""
    budget = ContextBudget("my-finetune")
    assert budget.source == "default"
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 4_000,
                                               "parameters": {"type": "object"}}} for i in range(12)]
    messages = conversation(3, result_chars=3_000)
    fit = fit_request(messages, tools, budget, {}, Sizes())
    assert fit.tokens > fit.available and fit.messages == messages
    assert (fit.stubbed, fit.dropped, fit.cut) == (0, 0, 0)


def test_a_request_that_cannot_fit_is_never_sent() -> None:
    budget = ContextBudget("tiny", window=1_024)
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": "d" * 400,
                                               "parameters": {"type": "object"}}} for i in range(12)]
    with pytest.raises(ModelContextExceeded) as caught:
        fit_request(conversation(1), tools, budget, {}, Sizes())
    assert caught.value.sent is False and "'tiny'" in str(caught.value) and "tools' schemas" in str(caught.value)


@pytest.mark.parametrize(("message", "body", "expected"), [
    # OpenAI (and llama-cpp-python, which copies it)
    ("This model's maximum context length is 5000 tokens. However, your messages resulted in 8415 tokens. "
     "Please reduce the length of the messages.", {"error": {"code": "context_length_exceeded"}}, (5000, 8415)),
    ("This model's maximum context length is 2048 tokens. However, you requested 2600 tokens (2344 in the "
     "messages, 256 in the completion).", None, (2048, 2344)),
    # llama.cpp's server
    ("request (4476 tokens) exceeds the available context size (4096 tokens)",
     {"error": {"code": 400, "type": "exceed_context_size_error", "n_prompt_tokens": 4476, "n_ctx": 4096}},
     (4096, 4476)),
    ("the request exceeds the available context size, try increasing it",
     {"error": {"type": "exceed_context_size_error"}}, (None, None)),
    # vLLM (old and new wording)
    ("This model's maximum context length is 4096 tokens. However, you requested 5000 tokens "
     "(4000 in the messages, 1000 in the completion).", None, (4096, 4000)),
    ("'max_tokens' or 'max_completion_tokens' is too large: 8000. This model's maximum context length is 4096 "
     "tokens and your request has 2778 input tokens (8000 > 4096 - 2778).", None, (4096, 2778)),
    # LM Studio, Mistral, Anthropic
    ("Trying to keep the first 5000 tokens when context the overflows. However, the model is loaded with context "
     "length of only 4096 tokens, which is not enough.", None, (4096, None)),
    ("Prompt contains 40000 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
     None, (32768, 40000)),
    ("prompt is too long: 210000 tokens > 200000 maximum", None, (200000, 210000)),
])
def test_context_refusals_of_real_servers_are_recognised(message: str, body: Any, expected: tuple) -> None:
    assert context_refusal(message, body) == expected


@pytest.mark.parametrize("message", ["Incorrect API key provided", "model 'x' not found",
                                     "messages[3].content: Input should be a valid string"])
def test_other_refusals_are_not_about_the_context(message: str) -> None:
    assert context_refusal(message, {"error": {"code": "invalid_request_error"}}) is None


def test_a_long_agentic_turn_keeps_its_question_and_latest_round() -> None:
    """300 small tool round trips in one turn: the oldest answered rounds leave, whole (a call with its
    result), the user's question and the latest round stay."""
    budget = ContextBudget("m", window=4_096)
    messages: list[dict[str, Any]] = [{"role": "system", "content": "You help."},
                                      {"role": "user", "content": "do it all"}]
    for index in range(300):
        messages += [{"role": "assistant", "content": "", "tool_calls": [
                         {"id": f"c{index}", "type": "function", "function": {"name": "noop", "arguments": "{}"}}]},
                     {"role": "tool", "tool_call_id": f"c{index}", "content": f"result {index}"}]
    fit = fit_request(messages, [], budget, {}, Sizes())
    assert fit.tokens <= fit.available and fit.dropped > 0
    sent = fit.messages
    assert sent[1] == messages[1] and sent[-2:] == messages[-2:]
    calls = [m["tool_calls"][0]["id"] for m in sent if m["role"] == "assistant"]
    results = [m["tool_call_id"] for m in sent if m["role"] == "tool"]
    assert calls == results  # every call sent has its result, every result its call


def test_sizes_carried_from_request_to_request_read_as_a_fresh_count() -> None:
    """``Sizes.measure`` carries a run's counts (and where its turn begins) from one request to the
    next and grows them in place: whatever the history does between requests (grows, is cut back,
    has a message replaced in the middle, gets a new system message), it reads as a fresh count."""
    import random

    rng = random.Random(7)
    carried = Sizes()
    messages: list[dict[str, object]] = [{"role": "system", "content": "x"}]
    turns: set[int] = set()
    for _ in range(1500):
        roll = rng.random()
        if roll < 0.5:
            messages.append({"role": rng.choice(["user", "assistant", "tool"]), "content": "y" * rng.randint(0, 9000)})
        elif roll < 0.6 and len(messages) > 2:
            messages = messages[: rng.randint(1, len(messages) - 1)]
        elif roll < 0.7 and len(messages) > 2:
            at = rng.randint(1, len(messages) - 1)
            messages = [*messages[:at], {"role": "assistant", "content": "z"}, *messages[at + 1 :]]
        else:
            messages = [{"role": "system", "content": "x" * rng.randint(0, 50)}, *messages[1:]]
        got = carried.measure(messages)
        assert got == Sizes().measure(messages)
        turns.add(got[3])
    assert len(turns) > 20  # the turn's start moved with the history


def _naive_pressure_and_history(messages: list[dict[str, Any]], tools_chars: int, budget: ContextBudget,
                                params: dict[str, Any]) -> tuple[int, int]:
    """What ``Fit.pressure`` and ``Fit.history`` say, counted the slow way: every message measured
    again, the turn found by a walk, every message of the turn compared with the share."""
    if not messages:
        return budget.tokens(raw_tokens(tools_chars, 0)), 0
    sizes = [wire_chars(m) for m in messages]
    has_system = messages[0].get("role") == "system"
    start = 1 if has_system else 0
    users = [i for i in range(1, len(messages)) if messages[i].get("role") == "user"]
    turn = max(start, users[-1] if users else 1 if has_system else 0)
    share = int(budget.available(params) / 2 / budget.effective_ratio * CHARS_PER_TOKEN)
    stub_saving = sum(sizes[i] - STUB_SIZE for i in range(start, turn)
                      if messages[i].get("role") == "tool" and sizes[i] > STUB_OVER)
    cap_saving = sum(size - share for size in sizes[turn:] if size > share)
    pressure = budget.tokens(raw_tokens(tools_chars + sum(sizes) - stub_saving - cap_saving, len(messages)))
    return pressure, budget.tokens(raw_tokens(sum(sizes[start:turn]) - stub_saving, turn - start))


_STEP = st.tuples(st.sampled_from(["user", "call", "result", "answer", "replace", "forget", "system", "replay",
                                   "calibrate"]),
                  st.integers(0, 12_000))


@settings(max_examples=60, deadline=None)
@given(history=st.lists(st.tuples(st.sampled_from(["user", "answer", "call", "result"]), st.integers(0, 6_000)),
                        max_size=12),
       steps=st.lists(_STEP, min_size=1, max_size=40), window=st.integers(1_500, 40_000),
       guessed=st.booleans(), max_tokens=st.sampled_from([None, 300, 2_000]), with_tools=st.booleans())
def test_the_carried_fast_path_fits_every_request_as_a_fresh_full_count_does(
        history: list[tuple[str, int]], steps: list[tuple[str, int]], window: int, guessed: bool,
        max_tokens: int | None, with_tools: bool) -> None:
    """A run's requests fitted with its carried ``Sizes`` and the message list's epoch (nothing compared
    that the list says only grew, nothing summed when no message of the turn is over the share, the
    request sent as it is when it is under the room) come out exactly as fitting each request from a
    fresh count does, and their pressure and history as counting the slow way does: on random threads
    that grow, answer calls, replace a message, forget their oldest history, change the system message
    and replay reasoning, against windows small enough to stub, cut, drop and refuse."""
    budget = ContextBudget("m", window=window, source="config")
    if guessed:
        budget = ContextBudget("a-model-nobody-knows")
    params: dict[str, Any] = {} if max_tokens is None else {"max_tokens": max_tokens}
    tools = [{"type": "function", "function": {"name": "get-workflow", "parameters": {"type": "object"}}}] \
        if with_tools else []
    counter = iter(range(10_000))
    open_calls: list[str] = []

    def message(kind: str, size: int) -> Message | None:
        text = "w" * size
        if kind == "user":
            return Message.user(text)
        if kind == "answer":
            return Message.assistant(text)
        if kind == "call":  # (the reasoning is sent again with the call when the model wants it)
            call_id = f"c{next(counter)}"
            open_calls.append(call_id)
            return Message(role="assistant", content="", reasoning="r" * (size // 7), tool_calls=[
                ToolCallPart(id=call_id, name="get-workflow", arguments={"q": text[:size // 3]})])
        if kind == "result" and open_calls:
            return Message.tool(open_calls.pop(0), "get-workflow", text)
        return None

    lst = MessageList()
    lst.add_history([m for m in (message(kind, size) for kind, size in history) if m is not None])
    carried = Sizes()
    system, replay = "You help.", False
    for kind, size in steps:
        if kind == "replace":
            texts = [m for m in lst.messages if m.role in ("user", "assistant") and not m.tool_calls]
            if texts:
                old = texts[size % len(texts)]
                lst.replace(old.model_copy(update={"content": "v" * (size // 2)}))
        elif kind == "forget":
            lst.forget({m.id for m in lst.messages[: size % 5] if m.id in lst.history_ids})
        elif kind == "system":
            system = "s" * (size // 4 if size % 3 else 0)
        elif kind == "replay":
            replay = not replay
        elif kind == "calibrate":  # (an answer's usage: the ratio the sums are turned into tokens with)
            budget.calibrate(1_000.0, 400 + size // 4)
        else:
            new = message(kind, size)
            if new is not None:
                lst.add_response([new])
        messages = lst.for_llm(system, replay_reasoning=replay)
        if not messages:  # (no run asks with nothing: there is always its question)
            continue
        try:
            fast: Fit | str = fit_request(messages, tools, budget, params, carried, epoch=lst.wire_epoch)
        except ModelContextExceeded as exc:
            fast = str(exc)
        try:
            full: Fit | str = fit_request(messages, tools, budget, params, Sizes())
        except ModelContextExceeded as exc:
            full = str(exc)
        assert fast == full
        if isinstance(fast, Fit):
            tools_chars = Sizes().tools_chars(tools)
            assert (fast.pressure, fast.history) == _naive_pressure_and_history(messages, tools_chars, budget, params)
            # the request is sent as it is (no list made) exactly when the slow count says it fits, with
            # the slow count's tokens
            count, total = len(messages), tools_chars + sum(wire_chars(m) for m in messages)
            raw, available = raw_tokens(total, count), budget.available(params)
            fits = budget.source == "default" or (budget.tokens(raw) <= available and total <= (
                available / budget.effective_ratio - 4 * count) * CHARS_PER_TOKEN)
            assert (fast.messages is messages) == fits
            if fits:
                assert (fast.tokens, fast.raw) == (budget.tokens(raw), raw)


def test_a_runs_sizes_keep_no_system_message_of_an_earlier_request() -> None:
    """Every request has a system message of its own (instructions, observations and working memory
    joined anew): a run's ``Sizes`` must not keep them, or a run of a thousand model calls holds a
    thousand system prompts."""
    import gc
    import weakref

    class Wire(dict):  # (a dict that can be weakly referenced)
        pass

    sizes, budget = Sizes(), ContextBudget("m", window=128_000)
    thread: list[dict[str, Any]] = [{"role": "user", "content": "go"}]
    first = Wire(role="system", content="You help. " * 500)
    fit_request([first, *thread], [], budget, {}, sizes)
    gone = weakref.ref(first)
    del first
    thread.append({"role": "assistant", "content": "done"})
    fit_request([Wire(role="system", content="You help. " * 500), *thread], [], budget, {}, sizes)
    gc.collect()
    assert gone() is None


def test_a_runs_tool_definitions_are_made_once_per_table_and_strictness() -> None:
    """Every request of a run sends the same list of the tools' entries (``Sizes.tools_chars`` then
    measures them once, by identity); another tool table or strictness makes them again."""
    from instance_ai_tui.runtime.run import Run
    from instance_ai_tui.runtime.scripted import ScriptedModel
    from instance_ai_tui.runtime.tools import tool

    @tool
    def find(name: str) -> str:
        "Find a thing."
        return name

    run = Run("a", ScriptedModel(lambda request: None), "r1", None, 5, {})
    run.tools = {"find": find}
    first = run.tool_definitions(False)
    assert run.tool_definitions(False) is first and first == [find.definition(strict=False)]
    strict = run.tool_definitions(True)
    assert strict is not first and strict == [find.definition(strict=True)]
    run.tools = {"find": find}
    assert run.tool_definitions(True) is not strict and run.tool_definitions(True) == strict


def test_a_turn_whose_biggest_message_is_a_calls_arguments_is_refused_not_cut_for_ever() -> None:
    """The model's own call of this turn carries a 30 k character workflow as its arguments and the
    window is 8 k: cutting the call's text (empty) never shrinks it; fitting must end (here: refused,
    as nothing of the turn can go), not go round for ever. Run in a child process so that the old
    behaviour fails the test (by its bound) instead of hanging the suite."""
    import subprocess
    import sys
    import textwrap

    code = textwrap.dedent('''
        import json
        from instance_ai_tui.runtime.context import ContextBudget, Sizes, fit_request
        from instance_ai_tui.runtime.errors import ModelContextExceeded
        call = {"id": "c1", "type": "function",
                "function": {"name": "create-workflow", "arguments": json.dumps({"workflow": "n" * 30_000})}}
        messages = [{"role": "system", "content": "You help."}, {"role": "user", "content": "build it"},
                    {"role": "assistant", "content": "", "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": "created"}]
        try:
            fit_request(messages, [], ContextBudget("m", window=8_000, source="config"), {}, Sizes())
        except ModelContextExceeded as exc:
            print("refused:", exc)
    ''')
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith("refused: the request does not fit 'm''s context of 8k tokens even cut down")


def test_a_refused_turn_names_the_models_own_call_that_does_not_fit() -> None:
    """What does not fit is the model's own call (its 30 k character arguments), not the instructions,
    tools or answer: the refusal names the call, its arguments' size, and what to do next."""
    import json

    from instance_ai_tui.runtime.errors import ModelContextExceeded

    arguments = json.dumps({"workflow": "n" * 30_000})
    call = {"id": "c1", "type": "function", "function": {"name": "create-workflow", "arguments": arguments}}
    messages = [{"role": "system", "content": "You help."}, {"role": "user", "content": "build it"},
                {"role": "assistant", "content": "", "tool_calls": [call]},
                {"role": "tool", "tool_call_id": "c1", "content": "created"}]
    with pytest.raises(ModelContextExceeded) as refused:
        fit_request(messages, [], ContextBudget("m", window=8_000, source="config"), {}, Sizes())
    said = str(refused.value)
    assert "the model's call of create-workflow" in said, said
    assert f"{len(arguments):,} characters" in said and "~12k tokens" in said, said
    assert "smaller steps" in said, said
