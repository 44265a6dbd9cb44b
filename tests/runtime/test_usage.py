"""Usage and cost, summed over turns and rolled up from a sub-agent."""

from __future__ import annotations

import pytest

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import FinishChunk
from instance_ai_tui.runtime.scripted import ScriptedModel, ScriptedResponse
from instance_ai_tui.runtime.usage import Price, PriceTable, Usage, compute_cost
from tests.support.openai_server import MockResponse

PRICES = {"m": {"input": 1.0, "output": 2.0, "cached_input": 0.5}}


async def test_usage_and_cost_sum_with_a_sub_agent(server, make_model):
    def script(body: dict) -> MockResponse:
        system = body["messages"][0]["content"]
        if system == "child":
            return MockResponse(text="Found 3 results.", prompt_tokens=50, completion_tokens=5, reasoning_tokens=3)
        if body["messages"][-1]["role"] == "tool":
            return MockResponse(text="The researcher found 3.", prompt_tokens=200, completion_tokens=20,
                                cached_tokens=100)
        return MockResponse.call("researcher", {"input": "look it up"}, prompt_tokens=100, completion_tokens=10)

    server.set_script(script)
    child = Agent("researcher", "child", make_model(model="m", prices=PRICES))
    parent = Agent("orchestrator", "parent", make_model(model="m", prices=PRICES), [child.as_tool("Research.")])
    stream = parent.stream("research this")
    chunks = [c async for c in stream]
    result = await stream.result()
    assert result.status == "success" and result.text == "The researcher found 3."
    own = Usage(input_tokens=300, output_tokens=30, total_tokens=330, cached_input_tokens=100, requests=2)
    own_cost = (200 * 1.0 + 100 * 0.5 + 30 * 2.0) / 1e6
    child_cost = (50 * 1.0 + 5 * 2.0) / 1e6
    assert result.usage.model_dump(exclude={"cost"}) == own.model_dump(exclude={"cost"})
    assert result.cost == pytest.approx(own_cost)
    [sub] = result.sub_agent_usage
    assert sub.agent == "researcher" and sub.usage.input_tokens == 50 and sub.usage.reasoning_tokens == 3
    assert sub.usage.cost == pytest.approx(child_cost) and sub.tool_call_id
    assert result.total_usage.input_tokens == 350 and result.total_usage.requests == 3
    assert result.total_cost == pytest.approx(own_cost + child_cost)
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.cost == pytest.approx(own_cost) and finish.total_cost == pytest.approx(own_cost + child_cost)
    assert finish.sub_agent_usage[0].agent == "researcher"
    state = parent.get_state()
    assert state["usage"]["input_tokens"] == 300 and state["sub_agent_usage"][0]["usage"]["output_tokens"] == 5


async def test_agent_price_table_prices_unpriced_usage():
    model = ScriptedModel([ScriptedResponse(text="hi", usage=Usage(input_tokens=1000, output_tokens=100,
                                                                   total_tokens=1100))], name="local-llm")
    table = PriceTable()
    table.extend({"local-llm": {"input": 0.2, "output": 0.4}})
    result = await Agent("a", "x", model, prices=table).generate("hi")
    assert result.cost == pytest.approx((1000 * 0.2 + 100 * 0.4) / 1e6)
    unpriced = await Agent("a", "x", ScriptedModel(["hi"], name="other")).generate("hi")
    assert unpriced.cost is None and unpriced.usage.requests == 1


def test_cost_formula_and_usage_sum():
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cached_input_tokens=400_000)
    assert compute_cost(usage, Price(input=2, output=8, cached_input=0.5)) == pytest.approx(1.2 + 0.2 + 8)
    assert compute_cost(usage, Price(input=2, output=8)) == pytest.approx(2 + 8)
    total = Usage(input_tokens=1, cost=None) + Usage(input_tokens=2, cost=0.5)
    assert total.input_tokens == 3 and total.cost == 0.5
    assert (Usage() + Usage()).cost is None
