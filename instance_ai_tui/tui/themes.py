"""Themes: YAML theme files, app-specific colour variables, status glyphs, live reload.

Integration (in the app)
------------------------
::

    from instance_ai_tui.tui import themes

    class InstanceAiApp(App):
        def get_theme_variable_defaults(self) -> dict[str, str]:
            # every APP_VARIABLES name, derived from the current theme's base colours, so
            # CSS may use $tool-running etc. with Textual's built-in themes too
            return themes.app_variable_defaults(self.current_theme)

        def on_mount(self) -> None:
            self.theme_manager = themes.ThemeManager(self)
            self.theme_manager.install(self.settings.ui.theme)

``ThemeManager(app, *, dirs=None, config_path=None, persist=True, watch=True, poll_interval=1.0)``
    ``install(selected)`` does everything below in one call: ``load()``, ``apply(selected)``,
    ``report_errors()`` and ``start()``. When ``selected`` is a built-in (the default
    ``textual-dark``) the files are read in a worker after it is applied, so they cost
    nothing before the first frame (``wait_loaded()`` waits for that). Separately:

    - ``load() -> list[ThemeLoadError]``: reads every ``*.yaml``/``*.yml`` in ``dirs``
      (default ``theme_dirs()``) and registers each theme with ``App.register_theme``,
      next to Textual's built-ins. Later dirs win on a name clash (user over repo).
      A broken file is skipped and its error kept (``errors``). ``load_async()`` does the
      file reading in a thread.
    - ``apply(name) -> str``: sets ``app.theme``; an unknown name falls back to
      ``textual-dark`` with a warning notification. Returns the applied name.
    - ``report_errors()``: one warning notification listing every broken theme file.
    - ``start()`` / ``stop()``: persistence of the chosen theme (every change of
      ``App.theme``, including the command palette's theme picker, is written to
      ``ui.theme`` in the config TOML from a thread, other keys untouched) and the file
      watcher (a worker polling mtimes every ``poll_interval`` s; a changed, added or
      removed file is re-read, re-registered and, if it is the current theme, re-applied).
      ``check_for_changes()`` is one poll step (used by the watcher and by tests).
    - ``available_themes() -> list[str]``: sorted names of every registered theme.
    - While an ANSI theme (``ansi: true``) is active the app has the class ``-ansi-theme``
      (``ANSI_CLASS``). ANSI colours cannot be blended, so a rule such as
      ``background: $warning 15%`` paints solid ``ansi_yellow`` under them and text in
      ``$text-warning`` disappears; give such widgets an override, e.g.
      ``App.-ansi-theme #demo-banner { background: transparent; }``.
    - ``file_themes``: name -> ``LoadedTheme`` (theme, path, parsed file) of file themes.
    - ``wait_loaded()`` / ``wait_persisted()``: await the background read / config write.

Functions: ``load_theme_file(path) -> LoadedTheme`` (raises ``ThemeFileError`` naming the
file and the problem), ``load_theme_dirs(dirs) -> (themes, errors)``, ``theme_dirs()``,
``builtin_themes_dir()``, ``repo_themes_dir()``, ``user_themes_dir()``,
``save_theme_choice(name, path=None)`` (blocking: writes ``ui.theme``, see
``config_writer``), ``app_variable_defaults(theme)``.

Theme files
-----------
``themes/*.yaml`` in the repository (the built-ins of this app; a copy ships as package
data in ``instance_ai_tui/tui/themes_builtin/``, used when the package is installed; a test
keeps the two identical), then ``config_dir()/themes/*.yaml``.
Schema (``ThemeFile``; unknown keys are errors)::

    name: instance-dark            # identity of the theme (the file name does not matter)
    description: ...               # optional; also author
    dark: true
    ansi: false                    # true: colours are the terminal's ANSI palette (ansi_blue ...)
    primary: "#7aa2f7"             # required; the rest optional (Textual derives them)
    secondary/accent/foreground/background/surface/panel/boost/warning/error/success: ...
    luminosity_spread: 0.15        # optional, as Textual's Theme; also text_alpha: 0.95
    app:                           # APP_VARIABLES; each "<colour>", "<colour> 50%" or "$<variable>"
      tool-failed: "$error"
    variables:                     # Textual component variables, passed through as is
      footer-key-foreground: "#7aa2f7"

App variables (``APP_VARIABLES``, usable as ``$name`` in TCSS and in ``Content`` markup):
severity-destructive, severity-warning, severity-info, reasoning-text, tool-running,
tool-done, tool-failed, tool-waiting, task-todo, user-message, user-message-background,
agent-border, subagent-border. Missing values are derived from the base colours
(``APP_VARIABLE_SOURCES``).

Glyph vocabulary (no signal is colour-only)
-------------------------------------------
Every status is shown as glyph + word, and the colour is only a third cue. The glyphs are
one cell wide and present in common terminal fonts (Fira Code, DejaVu Sans Mono; that is
why waiting is ◷ and not ⏸). Use the marks::

    TOOL_STATUS["running"|"done"|"failed"|"waiting"|"cancelled"|"interrupted"]  ● ✓ ✗ ◷ ⊘ ⊘
                (``"awaiting"`` is an alias of ``"waiting"``)
    TASK_STATUS["todo"|"in_progress"|"done"|"failed"|"cancelled"]    ○ ◐ ✓ ✗ ⊘
    SEVERITY["destructive"|"warning"|"info"]                         ‼ ⚠ ℹ

``StatusMark(glyph, label, variable)``; ``mark.markup()`` gives Content markup such as
``"[$tool-done]✓ done[/]"``; ``mark.markup(label=False)`` only the coloured glyph. Other
glyph constants: ``GLYPH_EXPANDED`` ▾, ``GLYPH_COLLAPSED`` ▸, ``GLYPH_ACTIVE`` ▸,
``GLYPH_READ_ONLY`` ⊡.
"""

from __future__ import annotations

import asyncio
import functools
import re
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from textual.color import Color, ColorParseError
from textual.theme import Theme

if TYPE_CHECKING:
    from textual.app import App

__all__ = [
    "ANSI_CLASS",
    "APP_VARIABLES",
    "APP_VARIABLE_SOURCES",
    "DEFAULT_THEME",
    "GLYPH_ACTIVE",
    "GLYPH_COLLAPSED",
    "GLYPH_EXPANDED",
    "GLYPH_READ_ONLY",
    "SEVERITY",
    "TASK_STATUS",
    "TOOL_STATUS",
    "LoadedTheme",
    "StatusMark",
    "ThemeFile",  # noqa: F822 - built on first use by the module's __getattr__
    "ThemeFileError",
    "ThemeLoadError",
    "ThemeManager",
    "app_variable_defaults",
    "builtin_themes_dir",
    "load_theme_dirs",
    "load_theme_file",
    "repo_themes_dir",
    "save_theme_choice",
    "theme_dirs",
    "user_themes_dir",
]

DEFAULT_THEME = "textual-dark"
#: app class present while an ANSI theme is active (ANSI colours cannot be blended, so
#: ``background: $warning 15%`` is solid there; override such rules under ``App.-ansi-theme``)
ANSI_CLASS = "-ansi-theme"

# --------------------------------------------------------------------------- glyphs


@dataclass(frozen=True, slots=True)
class StatusMark:
    """How one status is drawn: a glyph, a word, and the theme variable that colours them."""

    glyph: str
    label: str
    variable: str

    def markup(self, label: bool = True) -> str:
        """Content markup, e.g. ``[$tool-done]✓ done[/]`` (glyph only with ``label=False``)."""
        text = f"{self.glyph} {self.label}" if label else self.glyph
        return f"[${self.variable}]{text}[/]"

    def plain(self) -> str:
        """Glyph and word without colour, e.g. ``✓ done``."""
        return f"{self.glyph} {self.label}"


TOOL_STATUS: dict[str, StatusMark] = {
    "running": StatusMark("●", "running", "tool-running"),
    "done": StatusMark("✓", "done", "tool-done"),
    "failed": StatusMark("✗", "failed", "tool-failed"),
    "waiting": StatusMark("◷", "waiting for approval", "tool-waiting"),
    "cancelled": StatusMark("⊘", "cancelled", "task-todo"),
    "interrupted": StatusMark("⊘", "interrupted", "tool-waiting"),
}
TOOL_STATUS["awaiting"] = TOOL_STATUS["waiting"]
TASK_STATUS: dict[str, StatusMark] = {
    "todo": StatusMark("○", "todo", "task-todo"),
    "in_progress": StatusMark("◐", "in progress", "tool-running"),
    "done": StatusMark("✓", "done", "tool-done"),
    "failed": StatusMark("✗", "failed", "tool-failed"),
    "cancelled": StatusMark("⊘", "cancelled", "task-todo"),
}
SEVERITY: dict[str, StatusMark] = {
    "destructive": StatusMark("‼", "destructive", "severity-destructive"),
    "warning": StatusMark("⚠", "warning", "severity-warning"),
    "info": StatusMark("ℹ", "info", "severity-info"),
}
GLYPH_EXPANDED = "▾"
GLYPH_COLLAPSED = "▸"
GLYPH_ACTIVE = "▸"
GLYPH_READ_ONLY = "⊡"

# --------------------------------------------------------------------------- app variables

#: name -> what it colours
APP_VARIABLES: dict[str, str] = {
    "severity-destructive": "border and label of destructive confirmation cards",
    "severity-warning": "border and label of warning confirmation cards",
    "severity-info": "border and label of informational confirmation cards",
    "reasoning-text": "dimmed reasoning text",
    "tool-running": "tool call running (● running), task in progress",
    "tool-done": "tool call or task done (✓ done)",
    "tool-failed": "tool call or task failed (✗ failed)",
    "tool-waiting": "tool call waiting for approval (◷)",
    "task-todo": "task not started, cancelled items",
    "user-message": "accent (border, label) of the user's messages",
    "user-message-background": "background of the user's messages",
    "agent-border": "border of an assistant turn (the orchestrator)",
    "subagent-border": "border of a sub-agent section",
}

#: name -> Textual base variable it is derived from when a theme does not set it
APP_VARIABLE_SOURCES: dict[str, str] = {
    "severity-destructive": "error",
    "severity-warning": "warning",
    "severity-info": "primary",
    "reasoning-text": "foreground-muted",
    "tool-running": "primary",
    "tool-done": "success",
    "tool-failed": "error",
    "tool-waiting": "warning",
    "task-todo": "foreground-muted",
    "user-message": "accent",
    "user-message-background": "surface",
    "agent-border": "primary",
    "subagent-border": "secondary",
}

_defaults_cache: dict[int, tuple[Theme, dict[str, str]]] = {}


def _generated(theme: Theme) -> dict[str, str]:
    return {**theme.to_color_system().generate(), **theme.variables}


def app_variable_defaults(theme: Theme) -> dict[str, str]:
    """Values of every ``APP_VARIABLES`` entry for ``theme`` (its own, else derived).

    Meant for ``App.get_theme_variable_defaults``; cached per theme object.
    """
    cached = _defaults_cache.get(id(theme))
    if cached is not None and cached[0] is theme:
        return cached[1]
    variables = _generated(theme)
    values = {
        name: theme.variables.get(name) or variables.get(source, "")
        for name, source in APP_VARIABLE_SOURCES.items()
    }
    if len(_defaults_cache) > 64:
        _defaults_cache.clear()
    _defaults_cache[id(theme)] = (theme, values)
    return values


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
def _theme_file_model() -> type[BaseModel]:
    """``ThemeFile``, built on first use: creating the pydantic model costs ~20 ms, which
    the app's start-up should not pay when the theme in use is a built-in."""

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
            base = Theme(
                name=self.name,
                primary=self.primary,
                secondary=self.secondary,
                accent=self.accent,
                foreground=self.foreground,
                background=self.background,
                surface=self.surface,
                panel=self.panel,
                boost=self.boost,
                warning=self.warning,
                error=self.error,
                success=self.success,
                dark=self.dark,
                luminosity_spread=self.luminosity_spread,
                text_alpha=self.text_alpha,
                variables=dict(self.variables),
                ansi=self.ansi,
            )
            generated = _generated(base)
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


def __getattr__(name: str) -> Any:
    if name == "ThemeFile":
        return _theme_file_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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


def _format_validation(error: ValidationError) -> str:
    parts = []
    for item in error.errors():
        where = ".".join(str(p) for p in item.get("loc", ())) or "file"
        message = item.get("msg", "invalid").removeprefix("Value error, ")
        parts.append(f"{where}: {message}")
    return "; ".join(parts)


def _yaml_load(text: str) -> Any:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    return yaml.load(text, Loader=loader)


def load_theme_file(path: Path) -> LoadedTheme:
    """Read, validate and convert one theme file. Raises ``ThemeFileError``."""
    import yaml

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
        source: Any = _theme_file_model().model_validate(data)  # a ThemeFile (its class is built lazily)
        theme = source.to_theme()
    except ValidationError as exc:
        raise ThemeFileError(path, _format_validation(exc)) from None
    except (ValueError, ColorParseError) as exc:
        raise ThemeFileError(path, str(exc)) from None
    return LoadedTheme(theme=theme, path=path, source=source)


def _theme_files(directory: Path) -> list[Path]:
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
        for path in _theme_files(directory):
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
    """The package-data copy of the repository's ``themes/`` folder."""
    return Path(str(resources.files("instance_ai_tui.tui") / "themes_builtin"))


def repo_themes_dir() -> Path | None:
    """``themes/`` next to the package when running from a source checkout, else None."""
    root = Path(__file__).resolve().parents[2]
    candidate = root / "themes"
    return candidate if candidate.is_dir() and (root / "pyproject.toml").is_file() else None


def user_themes_dir() -> Path:
    from ..config import config_dir

    return config_dir() / "themes"


def theme_dirs() -> list[Path]:
    """Where themes are looked for, lowest priority first.

    The repository's ``themes/`` (or, when installed, its package-data copy), then the
    user's ``config_dir()/themes``.
    """
    return [repo_themes_dir() or builtin_themes_dir(), user_themes_dir()]


def save_theme_choice(name: str, path: Path | None = None) -> None:
    """Write ``ui.theme = name`` into the config TOML (blocking; other keys are kept).

    Raises ``config_writer.ConfigWriteError`` with a readable message.
    """
    from ..config import config_path
    from .config_writer import set_config_value

    set_config_value(path or config_path(), ("ui", "theme"), name)


# --------------------------------------------------------------------------- manager


def _snapshot(dirs: Sequence[Path]) -> dict[Path, tuple[int, int]]:
    state: dict[Path, tuple[int, int]] = {}
    for directory in dirs:
        for path in _theme_files(directory):
            try:
                stat = path.stat()
            except OSError:
                continue
            state[path] = (stat.st_mtime_ns, stat.st_size)
    return state


@dataclass
class _Changes:
    loaded: list[LoadedTheme] = field(default_factory=list)
    removed: list[Path] = field(default_factory=list)
    errors: list[ThemeLoadError] = field(default_factory=list)


def _read_changes(
    dirs: Sequence[Path], before: dict[Path, tuple[int, int]]
) -> tuple[dict[Path, tuple[int, int]], _Changes]:
    """Blocking: compare the folder state with ``before`` and read changed files."""
    after = _snapshot(dirs)
    changes = _Changes()
    for path, stamp in after.items():
        if before.get(path) != stamp:
            try:
                changes.loaded.append(load_theme_file(path))
            except ThemeFileError as exc:
                changes.errors.append(ThemeLoadError(path, exc.message))
    changes.removed = [path for path in before if path not in after]
    return after, changes


class ThemeManager:
    """Registers file themes with an app, applies and persists the choice, watches files."""

    def __init__(
        self,
        app: App[Any],
        *,
        dirs: Sequence[Path] | None = None,
        config_path: Path | None = None,
        persist: bool = True,
        watch: bool = True,
        poll_interval: float = 1.0,
    ) -> None:
        self.app = app
        self.dirs: list[Path] = list(dirs) if dirs is not None else theme_dirs()
        self.config_path = config_path
        self.persist = persist
        self.watch = watch
        self.poll_interval = poll_interval
        #: name -> the file theme registered under that name
        self.file_themes: dict[str, LoadedTheme] = {}
        self.errors: list[ThemeLoadError] = []
        self._owner: dict[Path, str] = {}  # every readable file -> the theme name it defines
        self._shadowed: dict[str, Theme] = {}  # built-ins replaced by a file theme of that name
        self._stamps: dict[Path, tuple[int, int]] = {}
        self._started = False
        self._subscribed = False
        self._persisted: str | None = None
        self._wanted: str | None = None
        self._write_lock = threading.Lock()

    # ----------------------------------------------------------------- registering
    def _priority(self, path: Path) -> int:
        for index, directory in enumerate(self.dirs):
            if path.parent == directory:
                return index
        return -1

    def _register(self, loaded: LoadedTheme) -> bool:
        """Register ``loaded`` unless a higher-priority file defines the same name."""
        name, path = loaded.theme.name, loaded.path
        previous_name = self._owner.get(path)
        self._owner[path] = name
        if previous_name is not None and previous_name != name:
            self._drop(previous_name, path)  # the file was renamed inside
        current = self.file_themes.get(name)
        if current is not None and current.path != path:
            if self._priority(current.path) > self._priority(path):
                return False
        if current is None and name in self.app.available_themes:
            self._shadowed[name] = self.app.available_themes[name]
        self.file_themes[name] = loaded
        self.app.register_theme(loaded.theme)
        return True

    def _drop(self, name: str, path: Path) -> bool:
        """``path`` no longer defines ``name``: unregister it or fall back to another source.

        The theme in use is kept registered (it just stops following its file).
        """
        current = self.file_themes.get(name)
        if current is None or current.path != path or name == self.app.theme:
            return False
        del self.file_themes[name]
        others = sorted(
            (p for p, n in self._owner.items() if n == name and p != path),
            key=self._priority,
            reverse=True,
        )
        for other in others:
            try:
                if self._register(load_theme_file(other)):
                    return True
            except ThemeFileError:
                continue
        if name in self._shadowed:
            self.app.register_theme(self._shadowed.pop(name))
        else:
            self.app.unregister_theme(name)
        return True

    def _read_all(self) -> tuple[list[LoadedTheme], list[ThemeLoadError]]:
        """Blocking: every readable theme file (shadowed ones too), and the errors."""
        self._stamps = _snapshot(self.dirs)
        loaded: list[LoadedTheme] = []
        errors: list[ThemeLoadError] = []
        for directory in self.dirs:
            found, dir_errors = load_theme_dirs([directory])
            loaded.extend(found.values())
            errors.extend(dir_errors)
        return loaded, errors

    def _apply_loaded(self, loaded: list[LoadedTheme], errors: list[ThemeLoadError]) -> None:
        for item in loaded:  # lowest priority first: later ones win
            self._register(item)
        self.errors = list(errors)

    def load(self) -> list[ThemeLoadError]:
        """Read every theme file and register it (blocking; fine before the app runs)."""
        self._apply_loaded(*self._read_all())
        return self.errors

    async def load_async(self) -> list[ThemeLoadError]:
        """``load()`` with the file reading done in a thread."""
        self._apply_loaded(*(await asyncio.to_thread(self._read_all)))
        return self.errors

    # ----------------------------------------------------------------- choosing
    def available_themes(self) -> list[str]:
        """Sorted names of every registered theme (Textual's and the files')."""
        return sorted(self.app.available_themes)

    def apply(self, name: str) -> str:
        """Switch to ``name``; an unknown name falls back to the default with a warning."""
        if name not in self.app.available_themes:
            self.app.notify(
                f"Theme {name!r} is not available; using {DEFAULT_THEME!r}. "
                f"Themes: {', '.join(self.available_themes())}",
                title="Unknown theme",
                severity="warning",
                timeout=10,
            )
            name = DEFAULT_THEME
        self.app.theme = name
        return name

    def report_errors(self) -> None:
        """One warning notification listing every theme file that was skipped."""
        if self.errors:
            self.app.notify(
                "\n".join(str(error) for error in self.errors),
                title=f"{len(self.errors)} theme file(s) skipped",
                severity="warning",
                timeout=10,
            )

    def install(self, selected: str) -> str:
        """``load()``, ``apply(selected)``, ``report_errors()`` and ``start()``.

        When ``selected`` is already registered (a Textual built-in such as the default
        ``textual-dark``), it is applied at once and the theme files are read in a worker,
        off the path to the first frame; otherwise they are read first (blocking, small).
        """
        if selected in self.app.available_themes:
            applied = self.apply(selected)
            self.start()
            self.app.run_worker(self._load_later(), group="theme-load", exit_on_error=False)
            return applied
        self.load()
        applied = self.apply(selected)
        self.report_errors()
        self.start()
        return applied

    async def _load_later(self) -> None:
        was_ansi = self.app.current_theme.ansi
        await self.load_async()
        self.report_errors()
        if self.app.theme in self.file_themes:  # a file overrides the built-in in use
            self._reapply(self.app.theme, was_ansi)

    async def wait_loaded(self) -> None:
        """Wait until a deferred ``install`` has read the theme files (tests, scripts)."""
        await self.app.workers.wait_for_complete(
            [worker for worker in self.app.workers if worker.group == "theme-load"]
        )

    # ----------------------------------------------------------------- watching, persisting
    def start(self) -> None:
        """Persist future theme changes and start the file watcher (per the flags)."""
        if self._started:
            return
        self._started = True
        self._persisted = self.app.theme  # the theme in place now came from the config
        self.app.set_class(self.app.current_theme.ansi, ANSI_CLASS)
        if not self._subscribed:
            # never unsubscribed: ``Signal.unsubscribe(app)`` would drop the app's other callbacks
            self._subscribed = True
            self.app.theme_changed_signal.subscribe(self.app, self._on_theme_changed, immediate=True)
        if self.watch:
            self.app.run_worker(
                self._watch_loop(), name="theme-watcher", group="theme-watcher",
                exclusive=True, exit_on_error=False,
            )

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.app.workers.cancel_group(self.app, "theme-watcher")

    async def _watch_loop(self) -> None:
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.check_for_changes()

    async def check_for_changes(self) -> list[str]:
        """One poll: re-read changed files; returns the theme names (re)registered or dropped."""
        stamps, changes = await asyncio.to_thread(_read_changes, self.dirs, self._stamps)
        self._stamps = stamps
        touched: list[str] = []
        current = self.app.theme
        was_ansi = self.app.current_theme.ansi
        for path in changes.removed:
            name = self._owner.pop(path, None)
            if name is not None and self._drop(name, path):
                touched.append(name)
        reapply = False
        for loaded in changes.loaded:
            if self._register(loaded):
                touched.append(loaded.theme.name)
                reapply = reapply or loaded.theme.name == current
        if changes.errors:
            self.app.notify(
                "\n".join(f"{error} (previous version kept)" for error in changes.errors),
                title="Theme file not reloaded",
                severity="warning",
                timeout=10,
            )
        if reapply:
            self._reapply(current, was_ansi)
        return touched

    def _reapply(self, name: str, was_ansi: bool) -> None:
        theme = self.app.get_theme(name)
        if theme is None:
            return
        if theme.ansi != was_ansi:
            # the ANSI colour filter is only rebuilt by a real theme switch
            self.app.theme = DEFAULT_THEME if name != DEFAULT_THEME else "textual-light"
            self.app.theme = name
            return
        self.app.refresh_css(animate=False)
        self.app.theme_changed_signal.publish(theme)

    def _on_theme_changed(self, theme: Theme) -> None:
        if not self._started or theme.name != self.app.theme:
            return
        self.app.set_class(theme.ansi, ANSI_CLASS)
        name = theme.name
        if not self.persist or name == self._persisted:
            return
        self._persisted = name
        self._wanted = name
        self.app.run_worker(self._persist(), group="theme-persist", exit_on_error=False)

    async def _persist(self) -> None:
        from .config_writer import ConfigWriteError

        try:
            await asyncio.to_thread(self._write_wanted)
        except ConfigWriteError as exc:
            self.app.notify(str(exc), title="Theme choice not saved", severity="warning", timeout=10)

    def _write_wanted(self) -> None:
        with self._write_lock:  # the latest choice wins even if two writes overlap
            if self._wanted is not None:
                save_theme_choice(self._wanted, self.config_path)

    async def wait_persisted(self) -> None:
        """Wait until pending writes of the theme choice are done (tests, scripts)."""
        await self.app.workers.wait_for_complete(
            [worker for worker in self.app.workers if worker.group == "theme-persist"]
        )
