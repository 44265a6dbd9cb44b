"""The SSE parser reads the usual frames of a chunk whole (``SSEParser._frames``): the frames, ids,
retry, comments and rejections must be exactly those of reading the same stream line by line (one
character per feed never has a blank line in a chunk, so it never takes the whole-frame path)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.protocol.sse import SSEParser

_pieces = st.sampled_from([
    "id: 1\n", "id: 22\n", "id: 3\x00\n", "id:4\n", "data: {\"a\":1}\n", "data: x\n", "data:y\n", "data: [[[[\n",
    "event: run-sync\n", "retry: 50\n", ": ping\n", "\n", "\r\n", "\r", "data: \n", "junk\n", "data: {\"t\":\"é\"}\n",
    "id: 5\ndata: {\"type\":\"text-delta\"}\n\n", "data: only\n\n", "id: 9\ndata: a\ndata: b\n\n",
])


def _state(parser: SSEParser, frames: list) -> tuple:
    return (frames, parser.last_event_id, parser.retry, parser.comments, parser.rejected, parser.last_rejection)


def _read(text: str, cut: list[int], *, max_frame_chars: int, max_depth: int) -> tuple:
    parser = SSEParser(max_frame_chars=max_frame_chars, max_depth=max_depth)
    frames, start = [], 0
    for end in [*sorted(set(cut)), len(text)]:
        frames += parser.feed(text[start:end].encode())
        start = max(start, end)
    frames += parser.close()
    return _state(parser, frames)


@settings(max_examples=400, deadline=None)
@given(pieces=st.lists(_pieces, max_size=30), cut=st.lists(st.integers(0, 400), max_size=4),
       max_frame_chars=st.sampled_from([8, 16, 1000]), max_depth=st.sampled_from([2, 200]))
def test_whole_frames_read_as_the_lines_would(pieces: list[str], cut: list[int], max_frame_chars: int,
                                               max_depth: int) -> None:
    text = "".join(pieces)
    by_char = _read(text, list(range(len(text))), max_frame_chars=max_frame_chars, max_depth=max_depth)
    assert _read(text, cut, max_frame_chars=max_frame_chars, max_depth=max_depth) == by_char


def test_a_chunk_of_usual_frames_gives_each_frame() -> None:
    body = "".join(f"id: {n}\ndata: {{\"n\":{n}}}\n\n" for n in range(1, 501)) + "id: 501\ndata: {\"n\""
    parser = SSEParser()
    frames = parser.feed(body.encode())
    assert [f.id for f in frames] == [str(n) for n in range(1, 501)] and frames[-1].data == '{"n":500}'
    assert parser.feed(b":501}\n\n")[0].data == '{"n":501}' and parser.last_event_id == "501"
