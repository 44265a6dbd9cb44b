"""Themes: YAML theme files (``files``), the app's colour variables (``variables``), status glyphs
(``glyphs``), and ``manager.ThemeManager``, which registers, applies, persists and live-reloads them.

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
