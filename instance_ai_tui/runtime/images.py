"""Images a tool returned, for a model that reads images (issue 40 "images").

A tool result is text: an image in it is a placeholder such as ``[image image/png, 1.2 KB (image
3f9a0c1b2d4e)]``. The bytes are kept here, in memory only (never stored, never exported), bounded:
at most ``MAX_KEPT`` images and ``MAX_KEPT_BYTES`` in all (the oldest go first), one image at most
``MAX_ONE_BYTES``. When the model's request is built, ``with_images`` puts the images that the tool
messages name, that are still held, in a user message right after those tool messages: the way
OpenAI-compatible chat APIs take images (a tool message's content is text only). At most
``MAX_PER_REQUEST`` images go in one request (the newest). An image no longer held (after a
restart, or pushed out) stays its placeholder.

The model adapter sends them only while the model takes them: ``model.images = false`` turns them
off, and a model that refuses a request with images (``refuses_images``: a 400, 415 or 422, or
words naming images) gets the same request at once without them, and placeholders from then on.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from .errors import ModelContextExceeded, ModelHTTPError

#: the image types chat APIs take as ``image_url`` data URLs
IMAGE_TYPES = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
MAX_ONE_BYTES = 5 * 1024 * 1024
MAX_KEPT = 64
MAX_KEPT_BYTES = 32 * 1024 * 1024
MAX_PER_REQUEST = 8
#: a placeholder's reference: ``(image <12 hex digits>)``
_REF = re.compile(r"\(image ([0-9a-f]{12})\)\]")
INTRO = "The images that the tool results above refer to, each after its reference:"


class ImageStore:
    """Images by key, in memory, bounded; safe from any thread."""

    def __init__(self, max_kept: int = MAX_KEPT, max_bytes: int = MAX_KEPT_BYTES) -> None:
        self.max_kept = max_kept
        self.max_bytes = max_bytes
        self._images: OrderedDict[str, tuple[str, str, int]] = OrderedDict()  # key -> (mime, base64, bytes)
        self._bytes = 0
        self._lock = threading.Lock()

    def keep(self, mime: str, data: str) -> str | None:
        """The key of a base64 image of a type chat APIs take, within the size limit; else None."""
        mime = (mime or "").lower().strip()
        if mime not in IMAGE_TYPES or len(data) > MAX_ONE_BYTES * 4 // 3 + 4:
            return None
        try:
            size = len(base64.b64decode(data, validate=True))
        except (binascii.Error, ValueError):
            return None
        if size == 0 or size > MAX_ONE_BYTES:
            return None
        key = hashlib.sha256(f"{mime}\0{data}".encode()).hexdigest()[:12]
        with self._lock:
            if key in self._images:
                self._images.move_to_end(key)
                return key
            self._images[key] = (mime, data, size)
            self._bytes += size
            while self._images and (len(self._images) > self.max_kept or self._bytes > self.max_bytes):
                _key, (_m, _d, gone) = self._images.popitem(last=False)
                self._bytes -= gone
        return key

    def get(self, key: str) -> tuple[str, str] | None:
        with self._lock:
            held = self._images.get(key)
        return None if held is None else (held[0], held[1])

    def __len__(self) -> int:
        return len(self._images)


#: the process's images (one per process: the tools that return them and the model that reads them)
IMAGES = ImageStore()


def reference(key: str) -> str:
    """The end of a placeholder that names a held image."""
    return f"(image {key})]"


def has_images(messages: Sequence[dict[str, Any]]) -> bool:
    """Whether a request's messages carry an image part."""
    for message in messages:
        content = message.get("content")
        if isinstance(content, list) and any(isinstance(p, dict) and p.get("type") == "image_url" for p in content):
            return True
    return False


def with_images(messages: list[dict[str, Any]], store: ImageStore | None = None) -> list[dict[str, Any]]:
    """``messages`` with a user message of image parts after each run of tool messages whose text
    names held images (the newest ``MAX_PER_REQUEST`` in all); the same list when none does."""
    store = store or IMAGES
    if not len(store):
        return messages
    found: list[tuple[int, str]] = []  # (index of the run's last tool message, key)
    index = 0
    while index < len(messages):
        if messages[index].get("role") != "tool":
            index += 1
            continue
        end = index
        while end + 1 < len(messages) and messages[end + 1].get("role") == "tool":
            end += 1
        seen: set[str] = set()
        for message in messages[index:end + 1]:
            content = message.get("content")
            if isinstance(content, str) and "(image " in content:
                for key in _REF.findall(content):
                    if key not in seen and store.get(key) is not None:
                        seen.add(key)
                        found.append((end, key))
        index = end + 1
    if not found:
        return messages
    found = found[-MAX_PER_REQUEST:]
    by_run: dict[int, list[str]] = {}
    for end, key in found:
        by_run.setdefault(end, []).append(key)
    out: list[dict[str, Any]] = []
    for position, message in enumerate(messages):
        out.append(message)
        keys = by_run.get(position)
        if not keys:
            continue
        parts: list[dict[str, Any]] = [{"type": "text", "text": INTRO}]
        for key in keys:
            held = store.get(key)
            if held is None:
                continue
            mime, data = held
            parts.append({"type": "text", "text": f"(image {key})"})
            parts.append({"type": "image_url", "image_url": {"url": f"data:{mime};base64,{data}"}})
        out.append({"role": "user", "content": parts})
    return out



def refuses_images(exc: ModelHTTPError) -> bool:
    """Whether a model server's refusal may be of the images in the request: a 400, 415 or 422, or
    words naming images (llama.cpp without a vision projector: 500 "image input is not supported")."""
    if isinstance(exc, ModelContextExceeded) or exc.status_code in (401, 403, 404, 429):
        return False
    return exc.status_code in (400, 415, 422) or "image" in str(exc).lower()
