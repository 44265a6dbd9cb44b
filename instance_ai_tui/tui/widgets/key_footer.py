"""The main screen's footer: Textual's ``Footer``, fitted to the width (``keymap.fit_footer``).

Textual's footer lays every shown key out in a row and cuts what does not fit: at 160 columns
during a run with the conversation focused its last keys fell off, one cut in a word. This one
keeps each key whole: the full words when they fit, else the key table's short words, else it
leaves out the least useful keys first (``keymap.FOOTER_DROP_FIRST``). It fits again when the
width or the bindings change."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from textual import events
from textual.app import ComposeResult
from textual.screen import Screen
from textual.widget import Widget
from textual.widgets import Footer

from .. import keymap
from ..textual_internals import footer_bindings_ready, footer_key_class


@dataclass(frozen=True, slots=True)
class _Key:
    """One key as the footer shows it (what ``FooterKey`` is built from)."""

    key: str
    display: str
    words: str
    action: str
    disabled: bool
    tooltip: str
    palette: bool

    def same_key(self, other: _Key) -> bool:
        """The same key, maybe in other words (shortened to fit, or full again)."""
        return (self.key, self.display, self.action, self.disabled, self.tooltip, self.palette) == (
            other.key, other.display, other.action, other.disabled, other.tooltip, other.palette)


class KeyFooter(Footer):
    """Textual's ``Footer`` recomposes (every key unmounted and mounted again) whenever the screen
    says its bindings changed: each focus change and each run's start and end. That made the
    footer's whole row dirty beside the answer in the same screen update. This one recomposes
    only when the keys it shows change, and then mounts and removes only the keys that differ
    (the run's "Stop" appearing is one key mounted) and changes the words of the others in
    place (they are shortened to fit beside it)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: the keys mounted, in order (``None``: not composed yet)
        self._shown: list[_Key] | None = None

    def _plan(self) -> list[_Key]:
        """The keys to show now, fitted to the width."""
        active = self.screen.active_bindings
        seen: set[str] = set()
        entries = []
        for _node, binding, enabled, tooltip in active.values():
            if not binding.show or binding.action in seen:  # one key per action, as Textual's footer
                continue
            seen.add(binding.action)
            entries.append((binding, enabled, tooltip))
        palette = None
        if self.show_command_palette and self.app.ENABLE_COMMAND_PALETTE:
            found = active.get(self.app.COMMAND_PALETTE_BINDING)
            if found is not None:
                palette = found
        items = [keymap.FooterItem(binding.id, self.app.get_key_display(binding), binding.description)
                 for binding, _enabled, _tooltip in entries]
        if palette is not None:
            binding = palette[1]
            items.append(keymap.FooterItem(binding.id or "command-palette", self.app.get_key_display(binding),
                                           binding.description))
        width = self.size.width or self.app.size.width
        kept = keymap.fit_footer(items, width)
        words = {id(item): fitted.words for item, fitted in zip(items, _aligned(items, kept), strict=True)
                 if fitted is not None}
        plan = [_Key(binding.key, item.key, words[id(item)], binding.action, not enabled,
                     tooltip or binding.description, False)
                for item, (binding, enabled, tooltip) in zip(items, entries, strict=False) if id(item) in words]
        if palette is not None and id(items[-1]) in words:
            _node, binding, enabled, _tooltip = palette
            plan.append(_Key(binding.key, items[-1].key, words[id(items[-1])], binding.action, not enabled,
                             binding.tooltip or binding.description, True))
        return plan

    def _key_widget(self, key: _Key) -> Widget:
        FooterKey = footer_key_class()
        widget: Widget = FooterKey(key.key, key.display, key.words, key.action, disabled=key.disabled,
                                   tooltip=key.tooltip, classes="-command-palette" if key.palette else "")
        if not key.palette:
            widget = widget.data_bind(compact=Footer.compact)
        return widget

    def compose(self) -> ComposeResult:
        if not footer_bindings_ready(self):
            self._shown = None
            return
        plan = self._plan()
        self.styles.grid_size_columns = max(1, len(plan))
        self._shown = plan
        for key in plan:
            yield self._key_widget(key)

    async def recompose(self) -> None:
        """Mount and remove only the keys that changed (nothing when none did)."""
        shown = self._shown
        if shown is None or not self.is_attached or not footer_bindings_ready(self):
            await super().recompose()
            return
        plan = self._plan()
        if plan == shown:
            return
        FooterKey = footer_key_class()
        widgets = [child for child in self.children if isinstance(child, FooterKey)]
        if len(widgets) != len(shown):  # not what was composed: compose again
            await super().recompose()
            return
        # the keys at both ends that stay (their words may be shortened or lengthened in place)
        head = 0
        while head < min(len(plan), len(shown)) and plan[head].same_key(shown[head]):
            head += 1
        tail = 0
        while tail < min(len(plan), len(shown)) - head and plan[-1 - tail].same_key(shown[-1 - tail]):
            tail += 1
        kept = [*zip(widgets[:head], plan[:head], strict=True),
                *zip(widgets[len(widgets) - tail:], plan[len(plan) - tail:], strict=True)]
        for widget, key in kept:
            if getattr(widget, "description", key.words) != key.words:
                widget.description = key.words  # (what FooterKey.render draws)
                widget.refresh(layout=True)
        gone = widgets[head:len(widgets) - tail]
        new = [self._key_widget(key) for key in plan[head:len(plan) - tail]]
        self._shown = plan
        self.styles.grid_size_columns = max(1, len(plan))
        async with self.batch():
            if gone:
                await self.remove_children(gone)
            if new:
                if tail:
                    await self.mount_all(new, before=widgets[len(widgets) - tail])
                elif head:
                    await self.mount_all(new, after=widgets[head - 1])
                else:
                    await self.mount_all(new)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        """Textual's footer ignores a change while the terminal has not the focus (a window in the
        background, a detached tmux): the run's "Stop" stayed after the run had ended until the
        focus came back. The keys follow the bindings whatever the focus."""
        super().bindings_changed(screen)
        if not screen.app.app_focus and self.is_attached and screen is self.screen:
            self.call_after_refresh(self.recompose)

    def on_resize(self, event: events.Resize) -> None:
        if footer_bindings_ready(self) and self.is_attached:
            self.call_after_refresh(self.recompose)


def _aligned(items: list[keymap.FooterItem], kept: list[keymap.FooterItem]) -> list[keymap.FooterItem | None]:
    """``kept`` (a subsequence of ``items`` in order, words maybe shortened) beside ``items``:
    ``None`` where a key was left out."""
    out: list[keymap.FooterItem | None] = []
    rest = iter(kept)
    current = next(rest, None)
    for item in items:
        if current is not None and current.id == item.id and current.key == item.key:
            out.append(current)
            current = next(rest, None)
        else:
            out.append(None)
    return out
