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
``builtin_themes_dir()``, ``user_themes_dir()``,
``save_theme_choice(name, path=None)`` (blocking: writes ``ui.theme``, see
``config_writer``), ``app_variable_defaults(theme)``.

Theme files
-----------
``instance_ai_tui/tui/themes_builtin/*.yaml`` (the built-ins of this app, package data: one copy
for a source checkout and an installed package alike), then ``config_dir()/themes/*.yaml``.
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

from typing import Any

from .files import (
    LoadedTheme,
    ThemeFileError,
    ThemeLoadError,
    builtin_themes_dir,
    load_theme_dirs,
    load_theme_file,
    save_theme_choice,
    theme_dirs,
    user_themes_dir,
)
from .glyphs import (
    GLYPH_ACTIVE,
    GLYPH_COLLAPSED,
    GLYPH_EXPANDED,
    GLYPH_READ_ONLY,
    SEVERITY,
    TASK_STATUS,
    TOOL_STATUS,
    StatusMark,
)
from .manager import ThemeManager
from .variables import ANSI_CLASS, APP_VARIABLE_SOURCES, APP_VARIABLES, DEFAULT_THEME, app_variable_defaults

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
    "ThemeFile",
    "ThemeFileError",
    "ThemeLoadError",
    "ThemeManager",
    "app_variable_defaults",
    "builtin_themes_dir",
    "load_theme_dirs",
    "load_theme_file",
    "save_theme_choice",
    "theme_dirs",
    "user_themes_dir",
]


def __getattr__(name: str) -> Any:
    if name == "ThemeFile":
        from .files import theme_file_model

        return theme_file_model()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
