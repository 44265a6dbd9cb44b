"""A failed run says which part failed, end to end (issue 26): the embedded assistant against a real
model server that fails, headless ``run`` on top. The ``error`` event carries the class
(``payload.code``) and words naming the model server, never "storage unavailable"; a broken answer
is never ``completed``, and what arrived before the failure stays, marked incomplete."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from instance_ai_tui.cli.run import HeadlessRun
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import ModelSettings, Settings
from tests.support.openai_server import MockOpenAIServer, MockResponse, closed_port_url

from .conftest import read_run, types


def settings_for(tmp_path: Path, base_url: str) -> Settings:
    return Settings(db_path=tmp_path / "errors.sqlite3", workspace_root=tmp_path,
                    model=ModelSettings(name="mock", base_url=base_url, api_key="x", first_token_timeout=0.5,
                                        idle_timeout=0.5))


async def failed_run(tmp_path: Path, base_url: str) -> tuple[dict, dict, str, str]:
    async with EmbeddedClient(settings_for(tmp_path, base_url)) as client:
        await client.create_thread("t")
        run_id = await client.send("t", "hello there, please answer")
        items = await read_run(client, "t", run_id, timeout=60)
        assert types(items)[-1] == "run-finish"
        error = next(i.event for i in items if i.event is not None and i.event.type == "error")
        finish = items[-1].event
        assert finish is not None
        text = "".join(i.event.payload.text for i in items if i.event is not None and i.event.type == "text-delta")
        history = await client.messages("t")
        tree = history.messages[-1].agent_tree
        shown = tree.to_wire() if tree is not None else {}
    return error.payload.to_wire(), finish.payload.to_wire(), text, str(shown)


async def test_model_server_stopped_names_the_model_server_not_the_storage(tmp_path: Path) -> None:
    url = closed_port_url()
    error, finish, _, restored = await failed_run(tmp_path, url)
    assert error["code"] == "model_unreachable"
    assert error["content"] == f"the model server at {url} refused the connection: is it running? (OPENAI_BASE_URL)"
    assert finish["status"] == "error" and "storage" not in finish["reason"] and url in finish["reason"]
    assert f"the model server at {url} refused the connection" in restored  # the same words after a reload


@pytest.mark.parametrize(("response", "code", "words"), [
    (MockResponse(text="half of the answer and then", cut_after_bytes=900), "model_cut", "incomplete"),
    (MockResponse(content_type="text/html"), "model_malformed", "answered with text/html"),
    (MockResponse(text="late", first_chunk_delay=5.0), "model_timeout", "sent nothing for 0.5 s"),
    (MockResponse(raw_chunks=[{"choices": []}]), "model_malformed", "no usable chunk"),
])
async def test_a_broken_answer_is_never_completed(tmp_path: Path, response: MockResponse, code: str,
                                                  words: str) -> None:
    async with MockOpenAIServer(lambda body: response) as server:
        error, finish, text, _ = await failed_run(tmp_path, server.base_url)
    assert finish["status"] == "error", finish
    assert error["code"] == code and words in error["content"]
    assert f"the model server at {server.base_url}" in error["content"]
    if code == "model_cut":  # what arrived stays, and says it is incomplete
        assert text.startswith("half") and "incomplete" in error["content"]


async def test_headless_run_prints_the_model_servers_words_and_exits_1(tmp_path: Path) -> None:
    url = closed_port_url()
    out, err = io.StringIO(), io.StringIO()
    async with EmbeddedClient(settings_for(tmp_path, url)) as client:
        code = await HeadlessRun(client, "h", "hello there", json_mode=False, policy="none", out=out,
                                 err=err).run()
    assert code == 1
    assert f"the model server at {url} refused the connection" in err.getvalue() + out.getvalue()
    assert "storage unavailable" not in err.getvalue() + out.getvalue()
