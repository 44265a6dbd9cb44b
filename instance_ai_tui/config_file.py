"""Where the settings file lives, and reading it: no pydantic, so the TUI can read what its
first frame needs (``peek_ui``) before the validated ``config.Settings`` exist.

``config`` builds the ``Settings`` from ``read_config_file``; ``peek_ui`` is the same file's
``[ui]`` table as it is (no validation: a broken file or value is reported by ``config`` a
moment later, when the settings are loaded after the first frame).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

APP_NAME = "instance-ai"


class ConfigFileError(Exception):
    """The settings file exists but cannot be read or parsed; the message names it."""


def config_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_config_dir(APP_NAME, appauthor=False))


def data_dir() -> Path:
    import platformdirs

    return Path(platformdirs.user_data_dir(APP_NAME, appauthor=False))


def config_path() -> Path:
    given = os.environ.get("INSTANCE_AI_CONFIG")  # (platformdirs is imported only when it is not given)
    return Path(given) if given is not None else config_dir() / "config.toml"


def default_db_path() -> Path:
    return data_dir() / "instance-ai.sqlite3"


def read_config_file(path: Path) -> dict[str, Any]:
    """The TOML at ``path`` as a dict (``{}`` when there is no file); ``ConfigFileError`` if broken."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return {}
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None
    import tomllib

    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigFileError(f"cannot read config file {path}: {exc}") from None


def peek_ui(path: Path | None = None) -> dict[str, Any]:
    """The ``[ui]`` table of the settings file, unvalidated; ``{}`` when absent or unreadable."""
    try:
        ui = read_config_file(path or config_path()).get("ui")
    except ConfigFileError:
        return {}
    return ui if isinstance(ui, dict) else {}
