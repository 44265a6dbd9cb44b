"""Secrets kept out of every log line: URL credentials and query values, and registered values.

An MCP server's URL may carry its token (``https://host/mcp?token=…``, ``https://user:pw@host``)
and httpx, the ``mcp`` SDK and uvicorn log URLs as they are (``HTTP Request: POST https://…``).
``install()`` wraps the process's log record factory, so every record of every logger — ours and
third-party ones, whatever handler or formatter prints it — has its message (and traceback text)
scrubbed when it is made: a URL keeps its scheme, host, port and path, its user part becomes
``***@`` and each query value ``***``; a value given to ``register()`` (an MCP server's ``env``
and ``headers`` values) becomes ``***``. Records below a logger's level are never made, so the
cost is only paid for lines that are printed. This module imports nothing of ours.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

_URL = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]{0,20}://)([^\s'\"<>`]+)")
_QUERY_VALUE = re.compile(r"([?&;][^=&;#\s]*=)[^&;#\s]*")
#: secrets shorter than this are not replaced (they would turn ordinary words into ``***``)
MIN_SECRET = 8

_secrets: set[str] = set()
_lock = threading.Lock()
_installed = False


def register(*values: str) -> None:
    """Values never to be logged (an MCP server's env and header values)."""
    with _lock:
        _secrets.update(v for v in values if len(v) >= MIN_SECRET)


def _scrub_url(match: re.Match[str]) -> str:
    scheme, rest = match.group(1), match.group(2)
    cut = min((i for i in (rest.find("/"), rest.find("?"), rest.find("#")) if i >= 0), default=len(rest))
    authority, tail = rest[:cut], rest[cut:]
    if "@" in authority:
        authority = "***@" + authority.rsplit("@", 1)[1]
    return scheme + authority + _QUERY_VALUE.sub(r"\1***", tail)


def scrub(text: str) -> str:
    """``text`` with URL credentials and query values, and the registered secrets, replaced."""
    if "://" in text:
        text = _URL.sub(_scrub_url, text)
    if _secrets:
        for secret in sorted(_secrets, key=len, reverse=True):
            if secret in text:
                text = text.replace(secret, "***")
    return text


def install() -> None:
    """Scrub every log record of this process from now on (idempotent)."""
    global _installed
    with _lock:
        if _installed:
            return
        _installed = True
    previous = logging.getLogRecordFactory()

    def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except Exception:  # noqa: BLE001 - a broken format string is logging's to report, as it would
            return record
        clean = scrub(message)
        if clean != message:
            record.msg, record.args = clean, ()
        if record.exc_info and record.exc_info[0] is not None and not record.exc_text:
            text = logging.Formatter().formatException(record.exc_info)
            if scrub(text) != text:
                record.exc_text = scrub(text)
        return record

    logging.setLogRecordFactory(factory)
