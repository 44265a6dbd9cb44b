"""SSE parsing: WHATWG edge cases, chunking, decoding to protocol items."""

from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.protocol.events import TextDeltaEvent
from instance_ai_tui.protocol.sse import EventStreamDecoder, SSEFrame, SSEParser, frame_id
from instance_ai_tui.protocol.tree import RunSyncPayload


def parse_all(*chunks: str | bytes, incomplete: bool = False) -> tuple[list[SSEFrame], SSEParser]:
    parser = SSEParser()
    frames: list[SSEFrame] = []
    for chunk in chunks:
        frames.extend(parser.feed(chunk))
    frames.extend(parser.close(dispatch_incomplete=incomplete))
    return frames, parser


def test_basic_frames_ids_events_and_comments() -> None:
    frames, parser = parse_all(": ping\n\nid: 1\ndata: {\"a\":1}\n\nevent: run-sync\ndata: x\n\n: ping\n")
    assert frames == [SSEFrame('{"a":1}', "message", "1"), SSEFrame("x", "run-sync", None)]
    assert parser.comments == 2 and parser.last_event_id == "1"


def test_line_endings_crlf_cr_lf_mixed() -> None:
    expected = [SSEFrame("a\nb", "message", "7"), SSEFrame("c")]
    for text in (
        "id: 7\r\ndata: a\r\ndata: b\r\n\r\ndata: c\r\n\r\n",
        "id: 7\rdata: a\rdata: b\r\rdata: c\r\r",
        "id: 7\ndata: a\r\ndata: b\r\rdata: c\n\n",
    ):
        assert parse_all(text)[0] == expected, repr(text)


def test_crlf_split_across_chunks_is_one_line_end() -> None:
    frames, _ = parse_all("data: a\r", "\ndata: b\r", "\n\r", "\n")
    assert frames == [SSEFrame("a\nb")]


def test_bom_only_at_start_and_partial_utf8() -> None:
    raw = "\ufeffdata: héllo 🤖\n\n".encode()
    chunks = [raw[i : i + 1] for i in range(len(raw))]
    frames, _ = parse_all(*chunks)
    assert frames == [SSEFrame("héllo 🤖")]
    # a BOM later in the stream is not stripped: the field name '\ufeffdata' is unknown
    assert parse_all("data: x\n\n", "\ufeffdata: y\n\n")[0] == [SSEFrame("x")]


def test_field_parsing_rules() -> None:
    frames, parser = parse_all(
        "data\n\n"  # a data line without colon: empty data, still dispatched
        "data:no-space\n\n"
        "data:  two spaces\n\n"
        "id: a\x00b\ndata: nul-id\n\n"
        "retry: 15x\nretry: 3000\ndata: r\n\n"
        "unknown: field\ndata: u\n\n"
        "id: 9\n\n"  # no data: not dispatched, but the id is remembered
        "event: only-event\n\n"
    )
    assert frames == [
        SSEFrame(""),
        SSEFrame("no-space"),
        SSEFrame(" two spaces"),
        SSEFrame("nul-id", "message", None),
        SSEFrame("r", "message", None, 3000),
        SSEFrame("u"),
    ]
    assert parser.retry == 3000 and parser.last_event_id == "9"


def test_incomplete_last_frame_is_dropped_unless_asked() -> None:
    assert parse_all("data: done\n\ndata: partial")[0] == [SSEFrame("done")]
    assert parse_all("data: done\n\ndata: partial", incomplete=True)[0] == [SSEFrame("done"), SSEFrame("partial")]


def test_frame_id() -> None:
    assert frame_id("42") == 42 and frame_id(None) is None and frame_id("-1") is None and frame_id("x1") is None
    assert frame_id("٣") is None  # non-ASCII digits are not ids


def test_decoder_events_run_sync_and_diagnostics() -> None:
    event = {"type": "text-delta", "runId": "r", "agentId": "a", "payload": {"text": "hi"}}
    tree = {"agentId": "a", "role": "orchestrator", "status": "active", "textContent": "", "reasoning": "", "toolCalls": [],
            "children": [], "timeline": []}
    sync = {"runId": "r", "messageGroupId": "mg", "runIds": ["r"], "agentTree": tree, "status": "active", "backgroundTasks": []}
    text = (
        f"id: 1\ndata: {json.dumps(event)}\n\n"
        f"event: run-sync\ndata: {json.dumps(sync)}\n\n"
        "id: 2\ndata: not json\n\n"
        "id: x\ndata: {\"no\": \"type\"}\n\n"
        "event: run-sync\ndata: {\"agentTree\": 3}\n\n"
        "event: ping\ndata: keep\n\n"
        f"event: text-delta\ndata: {json.dumps({'runId': 'r', 'agentId': 'a', 'payload': {'text': '!'}})}\n\n"
    )
    decoder = EventStreamDecoder()
    items = decoder.feed(text) + decoder.close()
    assert [type(item).__name__ for _, item in items] == ["TextDeltaEvent", "RunSyncPayload", "TextDeltaEvent"]
    assert items[0][0] == 1 and items[1][0] is None
    assert isinstance(items[1][1], RunSyncPayload) and items[1][1].message_group_id == "mg"
    assert isinstance(items[2][1], TextDeltaEvent) and items[2][1].payload.text == "!"
    assert decoder.diagnostic_count == 4
    messages = " | ".join(decoder.diagnostics)
    assert "not JSON" in messages and "'x'" in messages and "run-sync" in messages and "type" in messages


def test_decoder_raw_mode_yields_dicts() -> None:
    decoder = EventStreamDecoder(raw_events=True)
    items = [*decoder.feed('id: 3\ndata: {"type":"status","payload":{"message":"m"}}\n\n'), *decoder.feed("data: [1]\n\n"),
             *decoder.close()]
    assert items == [(3, {"type": "status", "payload": {"message": "m"}})]


# --------------------------------------------------------------------------- properties

field_text = st.text(alphabet=st.characters(blacklist_characters="\r\n\x00", blacklist_categories=("Cs",)), max_size=12)
frames_strategy = st.lists(
    st.builds(
        lambda data, event, id_: (data, event, id_),
        st.lists(field_text, min_size=1, max_size=3),
        st.one_of(st.none(), st.text(alphabet="abcdefgh-", min_size=1, max_size=8)),
        st.one_of(st.none(), st.integers(0, 10**6).map(str)),
    ),
    max_size=8,
)


def serialise(frames: list[tuple[list[str], str | None, str | None]], newline: str, comments: bool) -> str:
    out = []
    for lines, event, id_ in frames:
        if comments:
            out.append(": keep-alive" + newline)
        if id_ is not None:
            out.append(f"id: {id_}{newline}")
        if event is not None:
            out.append(f"event: {event}{newline}")
        out.extend(f"data: {line}{newline}" for line in lines)
        out.append(newline)
    return "".join(out)


@settings(max_examples=200, deadline=None)
@given(frames=frames_strategy, newline=st.sampled_from(["\n", "\r\n", "\r"]), comments=st.booleans(),
       cuts=st.lists(st.integers(0, 10_000), max_size=6), as_bytes=st.booleans())
def test_any_chunking_of_a_stream_gives_the_same_frames(
    frames: list[tuple[list[str], str | None, str | None]], newline: str, comments: bool, cuts: list[int], as_bytes: bool
) -> None:
    text = serialise(frames, newline, comments)
    payload: str | bytes = text.encode() if as_bytes else text
    points = sorted({c % (len(payload) + 1) for c in cuts})
    chunks = [payload[a:b] for a, b in zip([0, *points], [*points, len(payload)], strict=False)]
    got, parser = parse_all(*chunks)
    expected = [SSEFrame("\n".join(lines), event or "message", id_) for lines, event, id_ in frames]
    assert got == expected
    assert parser.comments == (len(frames) if comments else 0)


@settings(max_examples=200, deadline=None)
@given(chunks=st.lists(st.one_of(st.binary(max_size=40), st.text(max_size=40)), max_size=8))
def test_garbage_never_raises(chunks: list[bytes | str]) -> None:
    decoder = EventStreamDecoder()
    for chunk in chunks:
        decoder.feed(chunk)
    decoder.close(dispatch_incomplete=True)


def test_a_frame_pydantic_refuses_is_named_by_where_and_what_on_every_path() -> None:
    """The stream decoder, the ingest path and ``parse_event`` name a refused frame alike: the path to
    the field, then what is wrong with it (``protocol.events.first_error``)."""
    from instance_ai_tui.protocol.events import EventParseError, parse_event
    from instance_ai_tui.protocol.ingest import decode

    bad_status = {"type": "status", "runId": "r", "agentId": "a", "payload": {"message": 1}}
    try:
        parse_event(bad_status)
    except EventParseError as exc:
        assert str(exc) == "invalid status event: status.payload.message: Input should be a valid string"
    else:
        raise AssertionError("a status with a number for its message was taken")
    bad_sync = {"runId": "r", "agentTree": 3}
    try:
        decode(None, {"type": "run-sync", "payload": bad_sync})
    except EventParseError as exc:
        said = str(exc)
    else:
        raise AssertionError("a run-sync frame whose tree is a number was taken")
    assert said.startswith("invalid run-sync frame: ") and ": " in said.removeprefix("invalid run-sync frame: ")
    decoder = EventStreamDecoder()
    assert decoder.feed(f"event: run-sync\ndata: {json.dumps(bad_sync)}\n\n") == []
    assert decoder.diagnostics[-1].endswith(said)
