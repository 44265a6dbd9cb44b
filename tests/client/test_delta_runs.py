"""A flood of our server's delta frames is read in bulk (``protocol.delta_runs``: a run of frames as
one ``DeltaRun``, decoded in C when folded): the conversation is the one the frames read one by one
build, diagnostics included, on random streams in our server's exact form and in forms it never
writes (escapes everywhere, lone surrogates split between deltas, ids replayed or skipped, CRLF,
comments, ``event:`` lines, frames over the parser's limit), whatever the pieces; the parser gives the
frames ``SSEParser`` gives once each run is taken apart."""

from __future__ import annotations

import asyncio
import json
import random
from typing import Any

import pytest

from instance_ai_tui.protocol.delta_runs import DeltaRun, RunSSEParser, decode_texts
from instance_ai_tui.protocol.sse import SSEParser
from tests.support.streams import client_items, fold, random_stream, sse_body, sse_client, take

#: texts that JSON must escape, or that decode differently split than whole
TEXTS = ('say "hi"', "back\\slash", "line\n", "\x1b[2J", "\x7f\x85", "é ✓ ", "\u2028", "", "\ud83d", "\ude00", "a\tb",
         "\\u0041", "😀")
SERVER_ORDER = ("type", "runId", "agentId", "responseId", "payload")


def ascii_form(data: dict[str, Any]) -> str:
    """Our server's key order, every non-ASCII character escaped (``\\uXXXX``, surrogate pairs split
    into two escapes): a form our server never writes and the bulk reader must read alike."""
    ordered = {key: data[key] for key in SERVER_ORDER if key in data}
    ordered.update({key: value for key, value in data.items() if key not in ordered})
    return json.dumps(ordered, separators=(",", ":"), ensure_ascii=True)


def server_stream(seed: int, count: int = 500) -> list[tuple[int | None, dict[str, Any]]]:
    """A random stream numbered as our server numbers it (1, 2, 3, ...)."""
    return [(index + 1, data) for index, (_, data) in enumerate(random_stream(seed, count, TEXTS))]


def body_of(stream: list[tuple[int | None, dict[str, Any]]], rng: random.Random) -> bytes:
    """SSE bytes: mostly our server's JSON, some frames in the escaped form."""
    from tests.support.streams import wire_json

    frames = []
    for event_id, data in stream:
        text = ascii_form(data) if rng.random() < 0.2 else wire_json(data)
        frames.append((f"id: {event_id}\n" if event_id is not None else "") + f"data: {text}\n\n")
    return "".join(frames).encode()


async def both_ways(stream: list[tuple[int | None, dict[str, Any]]], body: bytes, chunk: int,
                    events: int) -> tuple[list[Any], list[Any]]:
    client = sse_client(stream, chunk, body=body)
    plain = await asyncio.wait_for(take(client.events("t"), events), 30)
    batches = await asyncio.wait_for(take(client.batches("t"), events), 30)
    await client.close()
    return plain, [item for batch in batches for item in batch.items]


@pytest.mark.parametrize("seed", range(16))
async def test_bulk_reading_folds_like_one_by_one(seed: int) -> None:
    rng = random.Random(seed)
    stream = server_stream(seed)
    body = body_of(stream, rng)
    chunk = rng.choice([7, 300, 4096, 65536])
    events = len(client_items(stream))  # (a malformed one is skipped)
    plain, bulk = await both_ways(stream, body, chunk, events)
    assert all(type(item) is not DeltaRun for item in plain) and len(plain) == events
    assert sum(item.count for item in bulk) == events
    assert fold(bulk) == fold(plain)


async def test_a_flood_in_our_servers_form_is_read_in_runs() -> None:
    """(The equivalence above would hold trivially if no run were ever read in bulk.)"""
    stream: list[tuple[int | None, dict[str, Any]]] = [
        (1, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    texts = [f"{i} \"q\"\n" if i % 7 == 0 else f"{i} " for i in range(300)]
    stream += [(i + 2, {"type": "text-delta", "runId": "r", "agentId": "o", "responseId": "x",
                        "payload": {"text": text}}) for i, text in enumerate(texts)]
    plain, bulk = await both_ways(stream, sse_body(stream, server_form=True), 65536, len(stream))
    runs = [item for item in bulk if type(item) is DeltaRun and item.bodies is not None]  # (read in bulk)
    assert len(runs) == 1 and runs[0].count == 300 and runs[0].id == 301
    assert runs[0].joined() == "".join(texts)
    assert [(runs[0].ids[i], runs[0].wire(i)) for i in range(300)] == [(i + 2, stream[i + 1][1]) for i in range(300)]
    assert fold(bulk) == fold(plain)
    assert fold(bulk)[0][-1]["content"] == "".join(texts)


async def test_a_replay_inside_a_run_is_read_frame_by_frame() -> None:
    """A server that restarts and replays ids already read: the reader drops the repeats, in a run
    or not, and says so once per frame dropped, as without runs."""
    head = [(1, {"type": "run-start", "runId": "r", "agentId": "o", "payload": {"messageId": "m"}})]
    deltas = [(i, {"type": "text-delta", "runId": "r", "agentId": "o", "responseId": "x", "payload": {"text": f"{i},"}})
              for i in range(2, 40)]
    replayed = deltas[10:30]  # ids 12..31 again, then on
    more = [(i, {"type": "text-delta", "runId": "r", "agentId": "o", "responseId": "x", "payload": {"text": f"{i};"}})
            for i in range(40, 60)]
    stream = head + deltas + replayed + more
    body = sse_body(stream, server_form=True)
    plain_client = sse_client(stream, 65536, body=body)
    plain = await asyncio.wait_for(take(plain_client.events("t"), 59), 30)
    bulk_client = sse_client(stream, 65536, body=body)
    bulk = await asyncio.wait_for(take(bulk_client.batches("t"), 59), 30)
    assert fold(bulk) == fold(plain)
    assert bulk_client.diagnostics == plain_client.diagnostics and len(plain_client.diagnostics) == 20
    await plain_client.close()
    await bulk_client.close()


def expanded(items: list[Any]) -> list[tuple[str | None, str, str]]:
    """Frames as ``(id, event, data)``, each ``DeltaRun`` taken apart into its frames."""
    out: list[tuple[str | None, str, str]] = []
    for item in items:
        if isinstance(item, DeltaRun):
            out.extend((raw_id, "message", data) for raw_id, data in item.frames())
        else:
            out.append((item.id, item.event, item.data))
    return out


def hostile_body(rng: random.Random) -> str:
    """Runs in our server's form, broken here and there as a hostile or broken server would."""
    parts = []
    next_id = 1
    for _ in range(300):
        roll = rng.random()
        delta = {"type": rng.choice(["text-delta", "reasoning-delta"]), "runId": rng.choice(["r", "r\\u0041", "s"]),
                 "agentId": "o", "responseId": rng.choice(["x", "y"]), "payload": {"text": rng.choice(TEXTS)}}
        data = json.dumps(delta, separators=(",", ":"), ensure_ascii=rng.random() < 0.5)
        event_id = str(next_id)
        next_id += 1 if rng.random() < 0.95 else rng.choice([-3, 0, 2])
        if roll < 0.03:
            event_id = "0" + event_id  # a leading zero
        elif roll < 0.05:
            parts.append(": keep-alive\n")
        elif roll < 0.07:
            parts.append("event: other\n")
        elif roll < 0.09:
            data = data.replace('"payload"', '"payload" ')  # white space the form does not have
        elif roll < 0.1:
            data = data[:-1]  # cut short
        elif roll < 0.11:
            data = data.replace("}}", '},"ts":1}')
        elif roll < 0.12:
            data = '{"type":"text-delta","runId":"r","agentId":"o","responseId":"x","payload":{"text":"' + "z" * 300 + '"}}'
        elif roll < 0.13:
            data = data.replace("\\n", "\n")  # a raw line break: two data lines
        end = "\r\n\r\n" if roll > 0.985 else "\n\n"
        parts.append(f"id: {event_id}\ndata: {data}{end}")
    return "\ufeff" * (rng.random() < 0.5) + "".join(parts)


@pytest.mark.parametrize("seed", range(30))
def test_the_run_parser_gives_the_frames_the_plain_parser_gives(seed: int) -> None:
    rng = random.Random(seed)
    body = hostile_body(rng).encode("utf-8", "surrogatepass")  # (a raw lone surrogate: bytes UTF-8 refuses)
    limit = rng.choice([200, 16 * 1024 * 1024])
    plain, runs = SSEParser(max_frame_chars=limit), RunSSEParser(max_frame_chars=limit)
    plain_frames: list[Any] = []
    run_frames: list[Any] = []
    start = 0
    while start < len(body):
        size = rng.choice([1, 13, 500, 4096, 65536])
        piece = body[start:start + size]
        plain_frames.extend(plain.feed(piece))
        run_frames.extend(runs.feed_runs(piece))
        assert runs.last_event_id == plain.last_event_id
        start += size
    plain_frames.extend(plain.close())
    run_frames.extend(runs.close())
    assert expanded(run_frames) == expanded(plain_frames)
    assert (runs.rejected, runs.comments, runs.last_rejection) == (plain.rejected, plain.comments, plain.last_rejection)


def test_the_run_parser_finds_runs_in_a_piece() -> None:
    body = "".join(f'id: {i}\ndata: {{"type":"text-delta","runId":"r","agentId":"o","responseId":"x",'
                   f'"payload":{{"text":"{i}\\n"}}}}\n\n' for i in range(1, 101))
    frames = RunSSEParser().feed_runs(body)
    assert len(frames) == 1 and isinstance(frames[0], DeltaRun) and frames[0].ids == list(range(1, 101))
    assert frames[0].id == 100 and frames[0].rest() == "".join(f"{i}\n" for i in range(2, 101))
    assert RunSSEParser(runs=False).feed_runs(body) == SSEParser().feed(body)


def test_surrogate_escapes_split_between_deltas_decode_as_one_by_one() -> None:
    assert decode_texts(["\\ud83d", "\\ude00"]) == "\ud83d" + "\ude00"  # two lone halves, not one emoji
    assert decode_texts(["\\ud83d\\ude00", "x\\n"]) == "😀x\n"
    assert decode_texts(["plain", " text"]) == "plain text"
