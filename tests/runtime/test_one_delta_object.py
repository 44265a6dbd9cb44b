"""One object per streamed token in the runtime: the delta a model adapter yields is the chunk the
run emits (issue 25 item 2), stamped with its run and response; an adapter that yields one object
twice still gets two correctly stamped chunks."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

from instance_ai_tui.runtime.agent import Agent
from instance_ai_tui.runtime.chunks import ReasoningDeltaChunk, TextDeltaChunk
from instance_ai_tui.runtime.model import ModelChunk, ModelFinish, ModelReasoningDelta, ModelRequest, ModelTextDelta


class RecordingModel:
    """Yields the given deltas, then a stop; keeps every object it yielded."""

    name = "recording"

    def __init__(self, deltas: list[ModelTextDelta | ModelReasoningDelta]) -> None:
        self.deltas = deltas
        self.yielded: list[ModelChunk] = []

    async def stream(self, request: ModelRequest, *, cancel: asyncio.Event | None = None) -> AsyncIterator[ModelChunk]:
        for delta in self.deltas:
            self.yielded.append(delta)
            yield delta
        yield ModelFinish(reason="stop", model=self.name)


def test_a_model_delta_is_the_text_delta_chunk() -> None:
    delta = ModelTextDelta("Hel")
    assert isinstance(delta, TextDeltaChunk) and delta.type == "text-delta"
    assert delta.text == delta.delta == "Hel" and (delta.run_id, delta.response_id) == ("", "")
    reasoning = ModelReasoningDelta("hmm")
    assert isinstance(reasoning, ReasoningDeltaChunk) and reasoning.type == "reasoning-delta" and reasoning.text == "hmm"
    assert ModelTextDelta("a") == ModelTextDelta("a") and ModelTextDelta("a") != ModelTextDelta("b")


async def test_the_run_emits_the_adapters_own_objects_stamped() -> None:
    model = RecordingModel([ModelReasoningDelta("think"), ModelTextDelta("Hel"), ModelTextDelta("lo")])
    stream = Agent("main", "Be brief.", model).stream("hi")
    chunks = [c async for c in stream]
    deltas = [c for c in chunks if isinstance(c, TextDeltaChunk | ReasoningDeltaChunk)]
    assert [c.delta for c in deltas] == ["think", "Hel", "lo"]
    assert all(emitted is yielded for emitted, yielded in zip(deltas, model.yielded, strict=True))
    assert all(c.run_id == stream.run_id and c.response_id for c in deltas)
    assert len({c.response_id for c in deltas}) == 1
    assert (await stream.result()).text == "Hello"


async def test_one_object_yielded_twice_gives_two_chunks_each_stamped() -> None:
    again = ModelTextDelta("ha")
    first = RecordingModel([again, again])
    stream = Agent("main", "Laugh.", first).stream("hi")
    chunks = [c async for c in stream if isinstance(c, TextDeltaChunk)]
    assert [c.delta for c in chunks] == ["ha", "ha"] and chunks[0] is again and chunks[1] is not again
    assert all(c.run_id == stream.run_id for c in chunks)
    # the same object in a second run: that run's chunk carries that run's ids, the first keeps its own
    second = Agent("main", "Laugh.", RecordingModel([again])).stream("again")
    later = [c async for c in second if isinstance(c, TextDeltaChunk)]
    assert later[0].run_id == second.run_id != stream.run_id and again.run_id == stream.run_id


async def test_reasoning_and_text_objects_yielded_twice_keep_their_kinds() -> None:
    thought, said = ModelReasoningDelta("hm"), ModelTextDelta("ok")
    stream = Agent("main", "Think.", RecordingModel([thought, thought, said, said])).stream("hi")
    chunks = [c async for c in stream if isinstance(c, TextDeltaChunk | ReasoningDeltaChunk)]
    assert [c.delta for c in chunks] == ["hm", "hm", "ok", "ok"]
    assert [c.type for c in chunks] == ["reasoning-delta", "reasoning-delta", "text-delta", "text-delta"]
    assert isinstance(chunks[1], ReasoningDeltaChunk) and not isinstance(chunks[1], TextDeltaChunk)
    assert chunks[0] is thought and chunks[1] is not thought and chunks[3] is not said
    assert all(c.run_id == stream.run_id and c.response_id for c in chunks)
    assert (await stream.result()).text == "okok"
