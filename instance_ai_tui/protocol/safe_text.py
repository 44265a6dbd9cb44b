"""Text from outside made safe to draw on a terminal: control characters shown, never obeyed.

Everything a model, a tool, a server or n8n sends may end up on the user's terminal. A
terminal obeys what it is sent: ``ESC ] 52 ; c ; ... BEL`` writes the clipboard, ``ESC ] 0 ;``
the window title, ``ESC [ 2 J`` wipes the screen; a bidi override (U+202E) reorders what the
reader sees. ``visible`` is the one function that stands between such text and a terminal:
every character a terminal could act on is replaced by a printable stand-in that shows it was
there, so the text stays readable and nothing is lost silently:

- C0 controls but tab and newline (``\\x00``-``\\x1f``): the Control Pictures ``␀``-``␟``
  (ESC is ``␛``, so ``ESC]52;`` reads ``␛]52;``);
- DEL: ``␡``;
- C1 controls (``\\x80``-``\\x9f``, e.g. the 8-bit CSI ``\\x9b``): ``<U+009B>``;
- bidi embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069): ``<U+202E>``.

Each character is replaced on its own, so text that arrives in pieces (a streamed answer's
deltas, an escape sequence split between two of them) comes out the same as whole text. The
check is one compiled regular expression: text with nothing to replace (nearly all of it) is
returned as it is, without a copy.

``visible_data`` does the same for JSON-like data (dicts, lists, strings: tool arguments and
results) and returns the same object when nothing changed. ``unsafe_in_json`` tells from a
JSON document's text whether the data it encodes would change, so a pydantic model is only
walked when it needs to be. This module imports nothing of ours.
"""

from __future__ import annotations

import json
import re
from typing import Any, TypeVar

_M = TypeVar("_M")

#: every character ``visible`` replaces
UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")

#: the same characters as they appear in JSON text (JSON escapes C0 as ``\\u00XX`` or
#: ``\\b``, ``\\f``, ``\\r``; DEL, C1 and bidi stay raw, or ``\\u`` escaped with ensure_ascii).
#: A false positive (an escaped backslash before a ``b``) only costs a walk of the data.
_UNSAFE_JSON = re.compile(
    r"\\u00[01][0-9a-fA-F]|\\u00[89][0-9a-fA-F]|\\u007[fF]|\\u202[a-eA-E]|\\u206[6-9]|\\[bfr]"
    "|[\x7f-\x9f\u202a-\u202e\u2066-\u2069]"
)


#: what JSON text may hold raw that a terminal would obey (DEL, C1, bidi overrides) or a
#: reader of JSON lines could trip on (U+2028/9)
_JSON_RAW = re.compile("[\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def _stand_in(code: int) -> str:
    if code < 0x20:
        return chr(0x2400 + code)
    if code == 0x7F:
        return "\u2421"
    return f"<U+{code:04X}>"


_STAND_INS: dict[str, str] = {
    chr(code): _stand_in(code)
    for code in (*range(0x00, 0x09), *range(0x0B, 0x20), *range(0x7F, 0xA0), *range(0x202A, 0x202F),
                 *range(0x2066, 0x206A))
}
_TABLE = str.maketrans(_STAND_INS)
_search = UNSAFE.search


def visible(text: str) -> str:
    """``text`` with every control character (but tab and newline) and bidi override
    replaced by a printable stand-in (``␛]52;`` for ``ESC]52;``). Returns ``text`` itself
    when there is nothing to replace."""
    if _search(text) is None:
        return text
    return text.translate(_TABLE)


def json_safe(document: str) -> str:
    """A JSON document (``json.dumps(..., ensure_ascii=False)``) to print: JSON escapes C0
    itself, and what it leaves raw that a terminal would obey (DEL, C1, bidi overrides, and
    U+2028/9) is escaped as ``\\uXXXX`` too. The data it encodes is unchanged."""
    if _JSON_RAW.search(document) is None:
        return document
    return _JSON_RAW.sub(lambda m: f"\\u{ord(m.group()):04x}", document)


def unsafe_in_json(document: str | bytes) -> bool:
    """Whether the data a JSON document encodes holds a string ``visible`` would change
    (may say yes when it would not; never no when it would)."""
    if isinstance(document, (bytes, bytearray)):
        document = document.decode("utf-8", "replace")
    return _UNSAFE_JSON.search(document) is not None


def visible_model(model: _M) -> _M:
    """A pydantic model with ``visible`` applied to every string in it: the same object when
    none needs it (one JSON dump and one regular expression decide), else a copy validated
    from the visible data. (Duck-typed: this module does not import pydantic.)"""
    document = model.model_dump_json()  # type: ignore[attr-defined]
    if not unsafe_in_json(document):
        return model
    return type(model).model_validate(visible_data(json.loads(document)))  # type: ignore[attr-defined]


def visible_data(data: Any) -> Any:
    """``data`` (JSON-like: dicts, lists, tuples, strings, numbers) with ``visible`` applied to
    every string in it, keys included. Containers with nothing to change are returned as
    they are (the same object)."""
    if type(data) is str:
        return visible(data)
    if isinstance(data, dict):
        changed = False
        out: dict[Any, Any] = {}
        for key, value in data.items():
            new_key = visible(key) if type(key) is str else key
            new_value = visible_data(value)
            changed = changed or new_key is not key or new_value is not value
            out[new_key] = new_value
        return out if changed else data
    if isinstance(data, (list, tuple)):
        items = [visible_data(item) for item in data]
        if all(new is old for new, old in zip(items, data, strict=True)):
            return data
        return items if isinstance(data, list) else tuple(items)
    if isinstance(data, str):  # a str subclass
        return visible(str(data))
    return data
