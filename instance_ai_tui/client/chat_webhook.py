"""Continue an n8n chat session through the workflow's Chat Trigger webhook.

n8n's Chat Trigger accepts ``POST {action: "sendMessage", sessionId, chatInput}`` and answers
with ``{"output": "..."}`` (or a list of such items, or plain text). The memory node of the
workflow then writes the turn to Redis under the same ``sessionId``.
"""

from __future__ import annotations

from typing import Any

import httpx


class ChatWebhookError(Exception):
    """The webhook could not be reached or did not answer with a reply."""


def _reply_text(body: Any) -> str | None:
    if isinstance(body, list) and body:
        return _reply_text(body[0])
    if isinstance(body, dict):
        for key in ("output", "text", "response", "message"):
            if isinstance(body.get(key), str):
                return body[key]
        if isinstance(body.get("json"), dict):
            return _reply_text(body["json"])
    if isinstance(body, str):
        return body
    return None


async def send_chat_message(
    url: str, session_id: str, text: str, *, http: httpx.AsyncClient | None = None, timeout: float = 120.0
) -> str:
    """Send ``text`` to the chat webhook as ``session_id``; return the agent's reply."""
    payload = {"action": "sendMessage", "sessionId": session_id, "chatInput": text}
    own = http is None
    client = http or httpx.AsyncClient(timeout=timeout)
    try:
        response = await client.post(url, json=payload)
    except httpx.HTTPError as exc:
        raise ChatWebhookError(f"cannot reach the chat webhook {url}: {exc}") from None
    finally:
        if own:
            await client.aclose()
    if response.status_code >= 400:
        raise ChatWebhookError(f"chat webhook answered HTTP {response.status_code}: {response.text[:200]}")
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    reply = _reply_text(body)
    if reply is None:
        raise ChatWebhookError("chat webhook answered without a reply text")
    return reply
