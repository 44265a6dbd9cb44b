"""Theme files: the YAML schema, loading and checking them, where they live, saving the choice."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

# pydantic is imported where a theme file is validated: the app's first frame, painted with a
# built-in theme, does not wait for it (~30 ms)
if TYPE_CHECKING:
    from pydantic import BaseModel

from .variables import APP_VARIABLE_SOURCES, APP_VARIABLES, generated_variables

# --------------------------------------------------------------------------- theme files

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$")
_REFERENCE = re.compile(r"^\$(?P<name>[a-z0-9-]+)$")
_WITH_ALPHA = re.compile(r"^(?P<color>.+?)\s+(?P<alpha>\d{1,3})%$")


def _check_color(value: str) -> str:
    value = value.strip()
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ValueError(f"{value!r} is not a colour ({exc})") from None
    return value


def _check_color_value(value: str) -> str:
    """A colour, a colour with an alpha percentage, or a ``$variable`` reference."""
    value = value.strip()
    if _REFERENCE.match(value):
        return value
    alpha = _WITH_ALPHA.match(value)
    if alpha:
        if int(alpha.group("alpha")) > 100:
            raise ValueError(f"{value!r}: alpha must be 0-100%")
        _check_color(alpha.group("color"))
        return value
    return _check_color(value)


@functools.cache
def theme_file_model() -> type[BaseModel]:
    """``ThemeFile``, built on first use: creating the pydantic model costs ~20 ms, which
    the app's start-up should not pay when the theme in use is a built-in."""
    from pydantic import BaseModel, ConfigDict, Field, field_validator

    class ThemeFile(BaseModel):
        """One theme file (YAML), validated."""

        model_config = ConfigDict(extra="forbid")

        name: str
        description: str = ""
        author: str = ""
        dark: bool = True
        ansi: bool = False
        primary: str
        secondary: str | None = None
        accent: str | None = None
        foreground: str | None = None
        background: str | None = None
        surface: str | None = None
        panel: str | None = None
        boost: str | None = None
        warning: str | None = None
        error: str | None = None
        success: str | None = None
        luminosity_spread: float = Field(default=0.15, ge=0.0, le=1.0)
        text_alpha: float = Field(default=0.95, ge=0.0, le=1.0)
        app: dict[str, str] = Field(default_factory=dict)
        variables: dict[str, str] = Field(default_factory=dict)

        @field_validator("name")
        @classmethod
        def _name(cls, value: str) -> str:
            if not _NAME.match(value):
                raise ValueError(
                    f"{value!r} is not a valid theme name (letters, digits, '-', '_' and '.'; "
                    "starting with a letter or digit)"
                )
            return value

        @field_validator(
            "primary", "secondary", "accent", "foreground", "background", "surface",
            "panel", "boost", "warning", "error", "success",
        )
        @classmethod
        def _colors(cls, value: str | None) -> str | None:
            return None if value is None else _check_color(value)

        @field_validator("app")
        @classmethod
        def _app(cls, value: dict[str, str]) -> dict[str, str]:
            unknown = sorted(set(value) - set(APP_VARIABLES))
            if unknown:
                raise ValueError(
                    f"unknown app variable(s) {', '.join(unknown)}; known: {', '.join(APP_VARIABLES)}"
                )
            return {name: _check_color_value(str(color)) for name, color in value.items()}

        @field_validator("variables")
        @classmethod
        def _variables(cls, value: dict[str, Any]) -> dict[str, str]:
            return {str(name): str(item) for name, item in value.items()}

        def to_theme(self) -> Theme:
            """The Textual ``Theme``, with every app variable resolved to a concrete value."""
            base = Theme(**self.model_dump(exclude={"description", "author", "app"}))  # (the rest are its fields)
            generated = generated_variables(base)
            resolved: dict[str, str] = {}
            for name, source in APP_VARIABLE_SOURCES.items():
                value = self.app.get(name, f"${source}")
                reference = _REFERENCE.match(value)
                if reference:
                    target = reference.group("name")
                    if target in resolved:
                        value = resolved[target]
                    elif target in generated:
                        value = generated[target]
                    else:
                        raise ValueError(f"app.{name}: unknown variable ${target}")
                resolved[name] = value
            extra: dict[str, str] = {}
            if self.ansi:
                # Textual's screen CSS reads these in ANSI mode (see its ansi-dark / ansi-light)
                extra = {
                    "ansi-background": "ansi_black" if self.dark else "ansi_white",
                    "ansi-foreground": "ansi_white" if self.dark else "ansi_black",
                }
            base.variables = {**extra, **resolved, **self.variables}
            return base

    return ThemeFile


class ThemeFileError(Exception):
    """A theme file that cannot be used; the message names the file and the problem."""

    def __init__(self, path: Path, message: str) -> None:
        super().__init__(f"{path}: {message}")
        self.path = path
        self.message = message


@dataclass(frozen=True, slots=True)
class ThemeLoadError:
    path: Path
    message: str

    def __str__(self) -> str:
        return f"{self.path.name}: {self.message}"


@dataclass(frozen=True, slots=True)
class LoadedTheme:
    theme: Theme
    path: Path
    source: Any  # a ThemeFile


def _yaml_load(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def load_theme_file(path: Path) -> LoadedTheme:
    """Read, validate and convert one theme file. Raises ``ThemeFileError``."""
    import yaml
    from pydantic import ValidationError

    from ...config import validation_summary

    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ThemeFileError(path, f"cannot read file ({exc})") from None
    try:
        data = _yaml_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc)
        raise ThemeFileError(path, f"invalid YAML{where}: {problem}") from None
    if not isinstance(data, dict):
        raise ThemeFileError(path, "a theme file must be a YAML mapping (name: ..., primary: ...)")
    try:
        source: Any = theme_file_model().model_validate(data)  # a ThemeFile (its class is built lazily)
        theme = source.to_theme()
    except ValidationError as exc:
        raise ThemeFileError(path, validation_summary(exc)) from None
    except (ValueError, ColorParseError) as exc:
        raise ThemeFileError(path, str(exc)) from None
    return LoadedTheme(theme=theme, path=path, source=source)


def theme_files(directory: Path) -> list[Path]:
    try:
        entries = list(directory.iterdir())
    except (FileNotFoundError, NotADirectoryError):
        return []
    except OSError:
        return []
    return sorted(p for p in entries if p.suffix.lower() in (".yaml", ".yml") and p.is_file())


def load_theme_dirs(dirs: Iterable[Path]) -> tuple[dict[str, LoadedTheme], list[ThemeLoadError]]:
    """Every theme in ``dirs`` (later dirs win on a clash), and the files that failed."""
    themes: dict[str, LoadedTheme] = {}
    errors: list[ThemeLoadError] = []
    for directory in dirs:
        seen_here: dict[str, Path] = {}
        for path in theme_files(directory):
            try:
                loaded = load_theme_file(path)
            except ThemeFileError as exc:
                errors.append(ThemeLoadError(path, exc.message))
                continue
            name = loaded.theme.name
            if name in seen_here:
                errors.append(
                    ThemeLoadError(path, f"theme name {name!r} is already used by {seen_here[name].name}")
                )
                continue
            seen_here[name] = path
            themes[name] = loaded
    return themes, errors


def builtin_themes_dir() -> Path:
    """The app's own themes (package data: the same in a source checkout and installed)."""
    return Path(str(resources.files("instance_ai_tui.tui") / "themes_builtin"))


def user_themes_dir() -> Path:
    from ...config_file import config_dir

    return config_dir() / "themes"


def theme_dirs() -> list[Path]:
    """Where themes are looked for, lowest priority first.

    The app's own (``instance_ai_tui/tui/themes_builtin/``), then the user's ``config_dir()/themes``.
    """
    return [builtin_themes_dir(), user_themes_dir()]


def save_theme_choice(name: str, path: Path | None = None) -> None:
    """Write ``ui.theme = name`` into the config TOML (blocking; other keys are kept).

    Raises ``config_writer.ConfigWriteError`` with a readable message.
    """
    from ...config_file import config_path
    from ..config_writer import set_config_value

    set_config_value(path or config_path(), ("ui", "theme"), name)


