"""Every CLI printer shows text from outside with its control characters made visible (issue 31).

``replay`` (text, ``--ascii``, ``--json``) of a recorded stream full of the hostile string, and
``run`` / ``threads`` / ``export`` (Markdown and JSON) of the embedded agent whose model (the
repo's OpenAI-wire test server) answers with it: no ESC, C1, BEL, CR or bidi override reaches
stdout or stderr, and the stand-ins (``␛]52;``) do. The printing functions themselves
(``text_lines``, ``to_markdown``, ``to_json``) are checked too, on a tree that
did not pass through ``Conversation``.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from pathlib import Path
from typing import Any

from instance_ai_tui.protocol.events import parse_event
from instance_ai_tui.protocol.reducer import RunReducer
from instance_ai_tui.protocol.transcript import to_json, to_markdown
from tests.support.drawings import tree_text
from tests.support.fold import apply
from tests.support.openai_server import MockOpenAIServer, MockResponse

REPO = Path(__file__).resolve().parents[2]
HOSTILE = "ok\x1b]52;c;cHduZWQ=\x07 wipe\x1b[2J title\x1b]0;pwned\x07 csi\x9b2J nel\x85 \u202eevil\u202c end\r"
_RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


def assert_clean(text: str, *, drawn: bool = True, as_json: bool = False) -> None:
    """Nothing raw; with ``drawn`` the hostile text is there, made visible (as text: ``␛]52;``;
    in JSON, either that or JSON's own escapes: ``\\u001b]52;``, ``\\u202e``)."""
    found = _RAW.search(text)
    assert found is None, f"{found.group()!r} printed raw: {text[max(0, found.start() - 30):found.end() + 30]!r}"
    if drawn and as_json:
        assert re.search(r"(␛|\\u001b)\]52;c;cHduZWQ=", text) and re.search(r"(<U\+202E>|\\u202e)evil", text), text
    elif drawn:
        assert "␛]52;c;cHduZWQ=" in text and "<U+202E>evil" in text, text[:400]


def ev(kind: str, agent: str = "orchestrator-r1", **payload: Any) -> dict[str, Any]:
    return {"type": kind, "runId": "r1", "agentId": agent, "payload": payload}


def hostile_stream() -> list[dict[str, Any]]:
    return [
        ev("run-start", messageId="m1", userMessage=f"asked {HOSTILE}"),
        ev("thread-title-updated", title=f"title {HOSTILE}"),
        ev("reasoning-delta", text=f"thinking {HOSTILE}"),
        ev("tool-call", toolCallId="c1", toolName=f"search{HOSTILE}", args={f"k{HOSTILE}": HOSTILE}),
        ev("tool-result", toolCallId="c1", result={"hits": [HOSTILE]}),
        ev("agent-spawned", "a2", parentId="orchestrator-r1", role=f"helper {HOSTILE}", tools=[]),
        ev("agent-completed", "a2", role=HOSTILE, result=f"done {HOSTILE}"),
        ev("tasks-update", tasks=[{"id": "t1", "description": f"task {HOSTILE}", "status": "done"}]),
        *[ev("text-delta", text=HOSTILE[i : i + 2]) for i in range(0, len(HOSTILE), 2)],
        ev("error", content=f"error {HOSTILE}"),
        ev("run-finish", status="completed"),
    ]


async def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    environ = {**os.environ, "PYTHONPATH": str(REPO), "XDG_CONFIG_HOME": str(tmp_path / "config"),
               "XDG_DATA_HOME": str(tmp_path / "data"), **(env or {})}
    for name in ("INSTANCE_AI_CONFIG", "INSTANCE_AI_TOKEN", "INSTANCE_AI_DB", "INSTANCE_AI_MODEL"):
        environ.pop(name, None)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "instance_ai_tui", *args, cwd=str(tmp_path), env=environ,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), timeout=90)
    return proc.returncode or 0, out.decode(), err.decode()


async def test_replay_prints_every_kind_of_text_made_visible(tmp_path: Path) -> None:
    recording = tmp_path / "hostile.jsonl"
    lines = [json.dumps(event) for event in hostile_stream()]
    recording.write_text("\n".join([*lines, f"not json {HOSTILE}"]) + "\n", encoding="utf-8")
    for flags in ((), ("--ascii",), ("--json",)):
        code, out, err = await cli(tmp_path, "replay", str(recording), *flags)
        assert code == 0, err
        assert_clean(out, as_json=flags == ("--json",))
        assert_clean(err, drawn=False)
        if not flags:
            for text in ("title ok␛", "thinking ok␛", "searchok␛", "helper ok␛", "task ok␛", "error ok␛"):
                assert text in out, (text, out)
        if flags == ("--json",):
            json.loads(out)  # still JSON


def test_printing_functions_make_text_visible_on_their_own() -> None:
    reducer = RunReducer("orchestrator-r1")
    for event in hostile_stream():
        apply(reducer, parse_event(event))  # straight into a reducer: no Conversation on the way
    tree = reducer.tree()
    assert_clean(tree_text(tree))
    assert_clean(tree_text(tree, ascii=True))
    message = {"id": "m1", "role": "assistant", "createdAt": "2026-01-01T00:00:00Z", "content": HOSTILE,
               "agentTree": tree.to_wire()}
    from instance_ai_tui.protocol.api import InstanceAiMessage

    messages = [InstanceAiMessage.model_validate(message)]
    assert_clean(to_markdown(messages, title=HOSTILE))
    assert_clean(to_json(messages, title=HOSTILE), as_json=True)
    json.loads(to_json(messages, title=HOSTILE))


async def test_run_threads_and_export_print_the_models_text_made_visible(tmp_path: Path) -> None:
    workspace = tmp_path / "ws"
    workspace.mkdir()
    db = str(tmp_path / "hostile.sqlite3")

    def answer(body: dict[str, Any]) -> MockResponse:
        return MockResponse(text=f"Answer {HOSTILE}", reasoning=f"thinking {HOSTILE}", words_per_chunk=1)

    async with MockOpenAIServer(answer) as model:
        env = {"OPENAI_BASE_URL": model.base_url, "OPENAI_API_KEY": "sk-test-not-real"}
        common = ("--db", db, "--workspace", str(workspace), "--model", "gpt-mock")
        code, out, err = await cli(tmp_path, "run", f"hello {HOSTILE}", "--thread", "h1", *common, env=env)
        assert code == 0, err
        assert_clean(out)
        assert_clean(err, drawn=False)
        code, out, err = await cli(tmp_path, "run", "again", "--thread", "h1", "--json", *common, env=env)
        assert code == 0, err
        assert_clean(out, as_json=True)  # JSON lines: escaped (\u001b), still JSON
        assert any(json.loads(line)["type"] == "text-delta" for line in out.splitlines())
    for args in (("threads",), ("threads", "--json"), ("export", "h1"), ("export", "h1", "--format", "json")):
        code, out, err = await cli(tmp_path, *args, "--db", db, env=env)
        assert code == 0, (args, err)
        assert_clean(out, drawn=args[0] == "export", as_json="json" in args)
        assert_clean(err, drawn=False)
