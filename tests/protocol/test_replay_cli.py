"""``instance-ai replay``: SSE text and JSON lines, both dialects, text and JSON output."""

from __future__ import annotations

import argparse
import io
import json
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.cli import replay
from instance_ai_tui.protocol.reducer import build_agent_tree_wire

RUN = "run_x"
ROOT = f"orchestrator-{RUN}"


def run_replay(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="instance-ai replay")
    replay.add_arguments(parser)
    code = replay.main(parser.parse_args(argv))
    out, err = capsys.readouterr()
    return code, out, err


def n8n(kind: str, payload: dict[str, Any], agent: str = ROOT, run: str = RUN, **env: Any) -> dict[str, Any]:
    return {"type": kind, "runId": run, "agentId": agent, **env, "payload": payload}


def sse(frames: list[tuple[int | None, str | None, Any]], newline: str = "\n") -> str:
    out = [f": connected{newline}{newline}"]
    for event_id, name, data in frames:
        if event_id is not None:
            out.append(f"id: {event_id}{newline}")
        if name is not None:
            out.append(f"event: {name}{newline}")
        out.append(f"data: {data if isinstance(data, str) else json.dumps(data)}{newline}{newline}")
        out.append(f": ping{newline}{newline}")
    return "".join(out)


N8N_EVENTS: list[tuple[int | None, str | None, Any]] = [
    (1, None, n8n("run-start", {"messageId": "m", "messageGroupId": "mg_1"}, userId="u", ts=1_700_000_000_000)),
    (None, None, n8n("reasoning-delta", {"text": "Looking at workflows"}, responseId="a")),
    (2, None, n8n("tool-input-start", {"toolCallId": "t1", "toolName": "workflows"}, responseId="a", ts=1_700_000_000_100)),
    (3, None, n8n("tool-call", {"toolCallId": "t1", "toolName": "workflows", "args": {"action": "list"}}, responseId="a")),
    (4, None, n8n("tool-result", {"toolCallId": "t1", "result": [{"id": "1", "name": "Daily report"}]}, ts=1_700_000_000_900)),
    (None, None, n8n("text-delta", {"text": "You have "}, responseId="b")),
    (None, None, n8n("text-delta", {"text": "one workflow."}, responseId="b")),
    # the stored block of the same segment (as a replay after reconnect would bring it)
    (6, None, n8n("text-block", {"text": "You have one workflow."}, responseId="b")),
    (7, None, n8n("tasks-update", {"tasks": {"tasks": [
        {"id": "1", "description": "List", "status": "done"},
        {"id": "2", "description": "Report", "status": "in_progress"},
    ]}})),
    (None, None, "{broken json"),
    (8, None, n8n("run-finish", {"status": "completed"})),
    (9, None, {"type": "thread-title-updated", "runId": "", "agentId": "orchestrator", "payload": {"title": "Workflows"}}),
]


def test_replay_n8n_sse_text_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "capture.sse"
    path.write_text(sse(N8N_EVENTS, newline="\r\n"), encoding="utf-8")
    code, out, err = run_replay([str(path)], capsys)
    assert code == 0
    assert out == "\n".join(
        [
            "Thread: Workflows",
            "",
            "🤖 Orchestrator",
            '├── 💭 "Looking at workflows"',
            "├── 🔧 workflows list → [Daily report]",
            "├── 💬 You have one workflow.",
            "└── 📋 Tasks 1/2",
            "    ├── ✔ List",
            "    └── ◐ Report",
            "",
        ]
    )
    assert "not JSON" in err and "{broken json" in err


def test_replay_n8n_sse_json_is_the_agent_tree(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "capture.sse"
    path.write_text(sse(N8N_EVENTS), encoding="utf-8")
    code, out, _err = run_replay([str(path), "--json"], capsys)
    assert code == 0
    tree = json.loads(out)
    events = [data for _, _, data in N8N_EVENTS if isinstance(data, dict)]
    assert tree == build_agent_tree_wire(events).to_wire()
    assert tree["agentId"] == ROOT and tree["textContent"] == "You have one workflow."
    assert tree["toolCalls"][0]["startedAt"] == "2023-11-14T22:13:20.100Z"
    assert tree["tasks"] == {"tasks": [
        {"id": "1", "description": "List", "status": "done"},
        {"id": "2", "description": "Report", "status": "in_progress"},
    ]}


def test_replay_run_sync_frame_and_follow_up_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    snapshot = build_agent_tree_wire(
        [n8n("run-start", {"messageId": "m"}), n8n("text-block", {"text": "Plan approved. "}, responseId="p")]
    )
    sync = {"runId": RUN, "messageGroupId": "mg_1", "runIds": [RUN], "agentTree": snapshot.to_wire(), "status": "active",
            "backgroundTasks": []}
    run2 = "run_y"
    frames: list[tuple[int | None, str | None, Any]] = [
        (None, "run-sync", sync),
        (None, None, n8n("text-delta", {"text": "Building."}, responseId="q")),
        (5, None, n8n("run-finish", {"status": "completed"})),
        (6, None, n8n("run-start", {"messageId": "m2", "messageGroupId": "mg_1"}, agent=f"orchestrator-{run2}", run=run2)),
        (7, None, n8n("tool-call", {"toolCallId": "t9", "toolName": "build-workflow", "args": {}}, agent=f"orchestrator-{run2}", run=run2)),
        (8, None, n8n("run-finish", {"status": "cancelled", "reason": "user_cancelled"}, agent=f"orchestrator-{run2}", run=run2)),
    ]
    path = tmp_path / "sync.sse"
    path.write_text(sse(frames), encoding="utf-8")
    code, out, err = run_replay([str(path), "--ascii"], capsys)
    assert code == 0, err
    assert out == "\n".join(
        [
            "[agent] Orchestrator",
            "|-- [text] Plan approved. ",
            "|-- [text] Building.",
            "|-- [tool] build-workflow -> (no result)",
            "`-- [cancelled] cancelled (user)",
            "",
        ]
    )


def test_replay_seed_json_lines_with_several_groups(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], simple_listing: list[dict[str, Any]], autonomous_listing: list[dict[str, Any]]
) -> None:
    second = [{**event, "runId": "r2"} for event in autonomous_listing]
    path = tmp_path / "events.jsonl"
    lines = [json.dumps(e) for e in simple_listing] + ["", "not json", "[1]"]
    lines += [json.dumps({"id": i + 100, "event": e}) for i, e in enumerate(second)]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code, out, err = run_replay([str(path), "--json"], capsys)
    assert code == 0
    messages = json.loads(out)
    assert [m["id"] for m in messages] == ["r1", "r2"]
    assert messages[0]["agentTree"]["textContent"] == "You have 3 workflows:\n"
    assert [c["role"] for c in messages[1]["agentTree"]["children"]] == ["workflow builder", "execution debugger"]
    assert "line 8: not JSON" in err and "line 9: expected a JSON object" in err

    code, out, _ = run_replay([str(path)], capsys)
    assert code == 0
    assert out.count("🤖 Orchestrator") == 2 and "🤖 Sub-Agent B (execution debugger)" in out


def test_replay_json_array_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], simple_listing: list[dict[str, Any]]
) -> None:
    data = ("\ufeff" + json.dumps(simple_listing)).encode()
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data)))
    code, out, _ = run_replay(["-", "--json"], capsys)
    assert code == 0
    assert json.loads(out)["reasoning"] == "Let me look up..."


def test_replay_seed_sse_without_ids(tmp_path: Path, capsys: pytest.CaptureFixture[str], autonomous_listing: list[dict[str, Any]]) -> None:
    path = tmp_path / "seed.sse"
    # no trailing blank line: a truncated capture still yields its last frame
    path.write_text(sse([(None, None, e) for e in autonomous_listing]).rstrip("\n").rsplit(": ping", 1)[0].rstrip("\n"), encoding="utf-8")
    code, out, err = run_replay([str(path)], capsys)
    assert code == 0, err
    assert out.splitlines()[-1] == "└── 💬 Done! I created a workflow..."


def test_replay_missing_or_empty_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_replay([str(tmp_path / "nope.sse")], capsys)
    assert code == 2 and out == "" and "cannot read" in err and "nope.sse" in err
    code, _, err = run_replay([str(tmp_path)], capsys)
    assert code == 2 and "cannot read" in err
    empty = tmp_path / "empty.sse"
    empty.write_text(": ping\n\n", encoding="utf-8")
    code, out, err = run_replay([str(empty)], capsys)
    assert code == 1 and "no events found" in err


def test_replay_json_keeps_reasoning_segments_apart(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    events = [
        n8n("run-start", {"messageId": "m1"}),
        n8n("reasoning-delta", {"text": "First I list the workflows."}),
        n8n("tool-call", {"toolCallId": "t1", "toolName": "list-workflows", "args": {}}),
        n8n("tool-result", {"toolCallId": "t1", "result": {"workflows": []}}),
        n8n("reasoning-delta", {"text": "None exist, so I say so."}),
        n8n("text-delta", {"text": "You have no workflows."}),
        n8n("run-finish", {"status": "completed"}),
    ]
    path = tmp_path / "capture.jsonl"
    path.write_text("\n".join(json.dumps(e) for e in events), encoding="utf-8")
    code, out, _err = run_replay([str(path), "--json"], capsys)
    assert code == 0
    tree = json.loads(out)
    assert tree["reasoning"] == "First I list the workflows.\n\nNone exist, so I say so."
    assert [e["content"] for e in tree["timeline"] if e["type"] == "reasoning"] == [
        "First I list the workflows.", "None exist, so I say so."]


@pytest.mark.parametrize("form", ["sse", "json-lines", "json-array"])
def test_replay_reads_in_chunks_with_the_same_result(
    form: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The file is folded as it is read (bounded memory for large recordings, issue 14): any chunk size
    gives the same tree, also with a BOM, leading blank lines and multi-byte characters cut between chunks."""
    from instance_ai_tui import replay as replay_module

    events = [*N8N_EVENTS[:-1], (9, None, {"type": "thread-title-updated", "runId": "", "agentId": "orchestrator",
                                             "payload": {"title": "Wörkflöws ✓ 🚀"}})]
    if form == "sse":
        text = sse(events)
    elif form == "json-lines":
        text = "\n".join(json.dumps({"id": i, "event": e}, ensure_ascii=False) for i, _kind, e in events) + "\n"
    else:
        text = json.dumps([{"id": i, "event": e} for i, _kind, e in events], ensure_ascii=False, indent=1)
    path = tmp_path / "capture"
    path.write_bytes(b"\xef\xbb\xbf" + ("\n\n   \n" + text).encode("utf-8"))
    whole = run_replay([str(path), "--json"], capsys)
    assert whole[0] == 0 and whole[1].startswith("{")
    for size in (1, 2, 3, 7, 64):
        monkeypatch.setattr(replay_module, "_CHUNK", size)
        assert run_replay([str(path), "--json"], capsys) == whole, size
    assert "Wörkflöws ✓ 🚀" in run_replay([str(path)], capsys)[1]


def test_replay_keeps_only_the_diagnostics_it_shows(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "noisy.jsonl"
    good = json.dumps(n8n("run-start", {"messageId": "m1"}))
    path.write_text("\n".join([good] + ["{not json"] * 5000), encoding="utf-8")
    code, _out, err = run_replay([str(path)], capsys)
    assert code == 0
    lines = err.splitlines()
    assert len(lines) == 51 and lines[-1] == "replay: ... and 4950 more diagnostics"
