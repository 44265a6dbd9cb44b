"""Write one key of the TOML config file without clobbering the rest.

``tomllib`` only reads, so the app changes its config file (today: ``ui.theme`` when the
user picks a theme) with a small read-modify-write:

``set_config_value(path, ("ui", "theme"), "nord")``
    1. reads and parses the file (a missing file is an empty config; a file that does not
       parse raises ``ConfigWriteError`` and is left untouched);
    2. edits the text in place: replaces the ``theme = ...`` line of the ``[ui]`` table, or
       inserts one, or appends a ``[ui]`` table, so comments and layout survive;
    3. re-parses the result and checks that it equals the old config with only that key
       changed; if the in-place edit cannot guarantee that (exotic layouts such as an
       inline ``ui = {...}`` table), the whole document is re-serialised by ``dumps()``
       instead (comments are then lost, values are not) and checked the same way;
    4. writes atomically (temporary file in the same folder, then ``os.replace``), keeping
       the file's permission bits.

The function does blocking file I/O: call it from a thread (``asyncio.to_thread``) when
inside the event loop.

``dumps(data)`` is the minimal serialiser used for the fallback: tables, arrays of tables,
strings, booleans, integers, floats, dates and times, and arrays of those.
"""

from __future__ import annotations

import datetime as _dt
import math
import os
import re
import tempfile
import tomllib
from collections.abc import Sequence
from pathlib import Path
from typing import Any


class ConfigWriteError(Exception):
    """The config file could not be updated (unreadable, not valid TOML, not writable)."""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_TABLE_HEADER = re.compile(r"^\s*\[(?!\[)\s*(?P<name>[^\]]+?)\s*\]\s*(#.*)?$")
_ANY_HEADER = re.compile(r"^\s*\[")


# --------------------------------------------------------------------------- serialiser


def _key(key: str) -> str:
    return key if _BARE_KEY.fullmatch(key) else _string(key)


def _string(value: str) -> str:
    out = ['"']
    for char in value:
        code = ord(char)
        if char == '"':
            out.append('\\"')
        elif char == "\\":
            out.append("\\\\")
        elif char == "\n":
            out.append("\\n")
        elif char == "\t":
            out.append("\\t")
        elif char == "\r":
            out.append("\\r")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def _value(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, (_dt.datetime, _dt.date, _dt.time)):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_value(item) for item in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{_key(str(k))} = {_value(v)}" for k, v in value.items()) + "}"
    raise ConfigWriteError(f"cannot write a value of type {type(value).__name__} to TOML")


def _is_table_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(isinstance(item, dict) for item in value)


def _dump_table(data: dict[str, Any], prefix: tuple[str, ...], out: list[str]) -> None:
    scalars = [(k, v) for k, v in data.items() if not isinstance(v, dict) and not _is_table_array(v)]
    tables = [(k, v) for k, v in data.items() if isinstance(v, dict)]
    arrays = [(k, v) for k, v in data.items() if _is_table_array(v)]
    for key, value in scalars:
        out.append(f"{_key(str(key))} = {_value(value)}")
    for key, value in tables:
        path = (*prefix, str(key))
        has_scalars = any(not isinstance(v, dict) and not _is_table_array(v) for v in value.values())
        if has_scalars or not value:
            if out:
                out.append("")
            out.append("[" + ".".join(_key(p) for p in path) + "]")
        _dump_table(value, path, out)
    for key, items in arrays:
        path = (*prefix, str(key))
        for item in items:
            if out:
                out.append("")
            out.append("[[" + ".".join(_key(p) for p in path) + "]]")
            _dump_table(item, path, out)


def dumps(data: dict[str, Any]) -> str:
    """Serialise a ``tomllib``-shaped dict to TOML text."""
    out: list[str] = []
    _dump_table(data, (), out)
    return "\n".join(out) + ("\n" if out else "")


# --------------------------------------------------------------------------- in-place edit


def _with_value(data: dict[str, Any], keys: Sequence[str], value: Any) -> dict[str, Any]:
    out = dict(data)
    if len(keys) == 1:
        out[keys[0]] = value
        return out
    child = out.get(keys[0])
    if child is not None and not isinstance(child, dict):
        raise ConfigWriteError(f"{keys[0]!r} in the config file is not a table")
    out[keys[0]] = _with_value(child or {}, keys[1:], value)
    return out


def _header_name(line: str) -> str | None:
    match = _TABLE_HEADER.match(line)
    if match is None:
        return None
    return ".".join(part.strip().strip('"').strip("'") for part in match.group("name").split("."))


def _edit_text(text: str, keys: Sequence[str], value: Any) -> str:
    """Edit ``text`` so that the dotted key ``keys`` holds ``value``; layout is kept."""
    table, leaf = ".".join(keys[:-1]), keys[-1]
    rendered = f"{_key(leaf)} = {_value(value)}"
    key_line = re.compile(rf"^(\s*){re.escape(leaf)}\s*=")
    lines = text.splitlines()

    def replace_in(start: int, end: int) -> int | None:
        for index in range(start, end):
            match = key_line.match(lines[index])
            if match:
                lines[index] = match.group(1) + rendered
                return index
        return None

    if not table:
        end = next((i for i, line in enumerate(lines) if _ANY_HEADER.match(line)), len(lines))
        if replace_in(0, end) is None:
            lines.insert(0, rendered)
        return "\n".join(lines) + "\n"

    for index, line in enumerate(lines):
        if _header_name(line) == table:
            end = next(
                (i for i in range(index + 1, len(lines)) if _ANY_HEADER.match(lines[i])), len(lines)
            )
            if replace_in(index + 1, end) is None:
                insert_at = end
                while insert_at > index + 1 and not lines[insert_at - 1].strip():
                    insert_at -= 1
                lines.insert(insert_at, rendered)
            return "\n".join(lines) + "\n"

    body = "\n".join(lines).rstrip("\n")
    prefix = body + "\n\n" if body else ""
    return f"{prefix}[{'.'.join(_key(k) for k in keys[:-1])}]\n{rendered}\n"


def _write_atomic(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    mode: int | None = None
    try:
        mode = path.stat().st_mode & 0o777
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


def set_config_value(path: Path, keys: Sequence[str], value: Any) -> bool:
    """Set the dotted key ``keys`` to ``value`` in the TOML file at ``path``.

    Returns ``True`` when the file's layout and comments were kept, ``False`` when it
    had to be re-serialised. Raises ``ConfigWriteError`` with a readable message when
    the file cannot be read, parsed or written; the file is then left as it was.
    """
    if not keys:
        raise ValueError("keys must name at least one key")
    try:
        text = path.read_text(encoding="utf-8") if path.exists() else ""
    except OSError as exc:
        raise ConfigWriteError(f"cannot read config file {path}: {exc}") from None
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigWriteError(f"config file {path} is not valid TOML ({exc}); not changing it") from None
    expected = _with_value(data, keys, value)

    candidate = _edit_text(text, keys, value)
    kept_layout = True
    try:
        ok = tomllib.loads(candidate) == expected
    except tomllib.TOMLDecodeError:
        ok = False
    if not ok:
        kept_layout = False
        candidate = dumps(expected)
        if tomllib.loads(candidate) != expected:  # pragma: no cover - a bug in dumps()
            raise ConfigWriteError(f"cannot update {path}: the TOML writer could not represent it")
    try:
        _write_atomic(path, candidate)
    except OSError as exc:
        raise ConfigWriteError(f"cannot write config file {path}: {exc}") from None
    return kept_layout
