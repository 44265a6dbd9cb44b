"""The app's own colour variables (``$tool-done``, ``$severity-warning``, …) and their defaults per theme."""

from __future__ import annotations

from textual.theme import Theme

DEFAULT_THEME = "textual-dark"
#: app class present while an ANSI theme is active (ANSI colours cannot be blended, so
#: ``background: $warning 15%`` is solid there; override such rules under ``App.-ansi-theme``)
ANSI_CLASS = "-ansi-theme"

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


def generated_variables(theme: Theme) -> dict[str, str]:
    return {**theme.to_color_system().generate(), **theme.variables}


def app_variable_defaults(theme: Theme) -> dict[str, str]:
    """Values of every ``APP_VARIABLES`` entry for ``theme`` (its own, else derived).

    Meant for ``App.get_theme_variable_defaults``; cached per theme object.
    """
    cached = _defaults_cache.get(id(theme))
    if cached is not None and cached[0] is theme:
        return cached[1]
    variables = generated_variables(theme)
    values = {
        name: theme.variables.get(name) or variables.get(source, "")
        for name, source in APP_VARIABLE_SOURCES.items()
    }
    if len(_defaults_cache) > 64:
        _defaults_cache.clear()
    _defaults_cache[id(theme)] = (theme, values)
    return values


