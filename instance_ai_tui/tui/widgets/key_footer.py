"""The main screen's footer: Textual's ``Footer``, fitted to the width (``keymap.fit_footer``).

Textual's footer lays every shown key out in a row and cuts what does not fit: at 160 columns
during a run with the conversation focused its last keys fell off, one cut in a word. This one
keeps each key whole: the full words when they fit, else the key table's short words, else it
leaves out the least useful keys first (``keymap.FOOTER_DROP_FIRST``). It fits again when the
width or the bindings change."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.widgets import Footer

from .. import keymap
from ..textual_internals import footer_bindings_ready, footer_key_class


class KeyFooter(Footer):
    def compose(self) -> ComposeResult:
        if not footer_bindings_ready(self):
            return
        FooterKey = footer_key_class()
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
        self.styles.grid_size_columns = max(1, len(kept))
        for item, (binding, enabled, tooltip) in zip(items, entries, strict=False):
            if id(item) not in words:
                continue
            yield FooterKey(binding.key, item.key, words[id(item)], binding.action, disabled=not enabled,
                            tooltip=tooltip or binding.description).data_bind(compact=Footer.compact)
        if palette is not None and id(items[-1]) in words:
            _node, binding, enabled, tooltip = palette
            yield FooterKey(binding.key, items[-1].key, words[id(items[-1])], binding.action,
                            classes="-command-palette", disabled=not enabled,
                            tooltip=binding.tooltip or binding.description)

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
