"""Images a tool returned reach a model that reads them (issue 40): held in memory, bounded, put in a
user message after the tool results; ``images=False`` (``model.images = false``) never sends them."""

from __future__ import annotations

import base64
from collections.abc import Callable
from typing import Any

from instance_ai_tui.config import Settings
from instance_ai_tui.runtime.images import IMAGES, ImageStore, reference, with_images
from instance_ai_tui.runtime.model import ModelRequest
from instance_ai_tui.runtime.openai_model import OpenAIModel
from tests.support.openai_server import MockOpenAIServer, MockResponse

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 4).decode()


def history(key: str) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "mcp__s__chart", "arguments": "{}"}}
    return [{"role": "user", "content": "draw it"},
            {"role": "assistant", "content": "", "tool_calls": [call, {**call, "id": "c2"}]},
            {"role": "tool", "tool_call_id": "c1", "content": f"a chart [image image/png, 1.0 KB {reference(key)}"},
            {"role": "tool", "tool_call_id": "c2", "content": "no image here"}]


def test_the_store_is_bounded_and_takes_only_image_types_it_can_read() -> None:
    store = ImageStore(max_kept=2)
    keys = [store.keep("image/png", base64.b64encode(bytes([n]) * 10).decode()) for n in range(3)]
    assert all(keys) and len(store) == 2 and store.get(keys[0] or "") is None  # the oldest went
    assert store.keep("image/svg+xml", PNG) is None  # not an image chat APIs take
    assert store.keep("image/png", "not base64 at all!") is None
    assert store.keep("image/png", "") is None


def test_images_go_after_the_run_of_tool_results_and_an_unknown_one_stays_text() -> None:
    store = ImageStore()
    key = store.keep("image/png", PNG)
    assert key
    messages = history(key)
    out = with_images(messages, store)
    assert [m["role"] for m in out] == ["user", "assistant", "tool", "tool", "user"]
    parts = out[-1]["content"]
    assert parts[-1] == {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PNG}"}}
    assert with_images(history("0" * 12), store) == history("0" * 12)  # not held (a restart): the placeholder


async def test_images_off_by_the_setting_are_never_sent(make_model: Callable[..., OpenAIModel],
                                                        server: MockOpenAIServer) -> None:
    key = IMAGES.keep("image/png", PNG)
    assert key
    server.set_script([MockResponse(text="seen"), MockResponse(text="not seen")])
    on = make_model()
    off = make_model(images=False)
    for model in (on, off):
        [c async for c in model.stream(ModelRequest(messages=history(key)))]
    assert "image_url" in str(server.requests[0].body) and "image_url" not in str(server.requests[1].body)
    settings = Settings.model_validate({"model": {"name": "m", "base_url": server.base_url, "images": False}})
    assert OpenAIModel.from_settings(settings.model).images is False


def test_which_refusals_are_of_images() -> None:
    from instance_ai_tui.runtime.errors import ModelContextExceeded, ModelHTTPError, ModelRefused
    from instance_ai_tui.runtime.images import refuses_images

    assert refuses_images(ModelRefused("HTTP 400: invalid content part", status_code=400))
    assert refuses_images(ModelHTTPError("HTTP 500: image input is not supported", status_code=500))
    assert not refuses_images(ModelRefused("HTTP 401: bad key", status_code=401))
    assert not refuses_images(ModelContextExceeded("HTTP 400: too long", status_code=400))
    assert not refuses_images(ModelHTTPError("HTTP 503: overloaded", status_code=503))
