"""Issue 15 item 8: the SSE parser against a hostile server (long lines, endless data, deep nesting)."""

from __future__ import annotations

import json
import tracemalloc

from instance_ai_tui.protocol.sse import EventStreamDecoder, SSEParser, json_too_deep


def test_a_16_mib_line_in_small_chunks_parses_in_linear_time() -> None:
    """A 16 MiB data line fed in 4 KiB chunks took 3.1 s (the buffer was re-joined and re-scanned per
    chunk). Linear, without a clock: the unfinished line is kept as the chunks it came in (no piece
    ever longer than a chunk: nothing is re-joined before the line ends) and joined once at its end."""
    payload = json.dumps({"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "x" * (16 << 20)}})
    stream = ("id: 1\ndata: " + payload + "\n\n").encode()
    parser = SSEParser(max_frame_chars=32 << 20)
    frames = []
    longest_piece = 0
    for offset in range(0, len(stream), 4096):
        frames += parser.feed(stream[offset : offset + 4096])
        longest_piece = max(longest_piece, max(map(len, parser._parts), default=0))
    assert len(frames) == 1 and len(frames[0].data) == len(payload)
    assert longest_piece <= 4096


def test_data_without_newlines_costs_no_memory_and_is_dropped() -> None:
    parser = SSEParser(max_frame_chars=1 << 20)
    tracemalloc.start()
    try:
        chunk = b"data: " + b"A" * 65536
        for _ in range(200):  # 12.5 MiB without a newline
            assert parser.feed(chunk) == []
            chunk = b"A" * 65536
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4 << 20, f"peak {peak / 2**20:.1f} MiB"
    assert parser.rejected == 1 and "longer than" in parser.last_rejection
    # the stream recovers at the next frame boundary; the poisoned frame is never dispatched
    frames = parser.feed(b"\nid: 7\n\nid: 8\ndata: {\"ok\": true}\n\n")
    assert [(f.id, f.data) for f in frames] == [("8", '{"ok": true}')]


def test_a_frame_of_many_short_lines_over_the_limit_is_dropped() -> None:
    parser = SSEParser(max_frame_chars=1000)
    frames = parser.feed(("data: " + "y" * 99 + "\n") * 20 + "\n" + "data: {}\n\n")
    assert [f.data for f in frames] == ["{}"]
    assert parser.rejected == 1


def test_deeply_nested_json_is_dropped_not_a_recursion_error() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    assert json_too_deep(deep) and not json_too_deep('{"a": [[{"b": "[[[[[[["}]]]}', 4)
    decoder = EventStreamDecoder()
    items = decoder.feed(f"id: 1\ndata: {deep}\n\nid: 2\ndata: " + json.dumps(
        {"type": "run-start", "runId": "r", "agentId": "a", "payload": {"messageId": "m"}}) + "\n\n")
    assert [event_id for event_id, _ in items] == [2]
    assert any("nested deeper" in d for d in decoder.diagnostics)
    raw = EventStreamDecoder(raw_events=True)
    nested = {"type": "x"}
    for _ in range(150):
        nested = {"type": "x", "payload": nested}  # deep but under the limit: kept
    assert len(raw.feed(f"data: {json.dumps(nested)}\n\n")) == 1


def test_limits_do_not_change_ordinary_chunking() -> None:
    stream = "id: 1\r\ndata: {\"a\":1}\r\n\r\n: ping\r\nid: 2\rdata: {\"b\":\r\ndata: 2}\r\r"
    for size in (1, 2, 3, 7, 100):
        parser = SSEParser(max_frame_chars=64)
        frames = []
        for offset in range(0, len(stream), size):
            frames += parser.feed(stream[offset : offset + size])
        assert [(f.id, f.data) for f in frames] == [("1", '{"a":1}'), ("2", '{"b":\n2}')], size
        assert parser.comments == 1 and parser.rejected == 0
