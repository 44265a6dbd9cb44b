"""``ThemeManager``: registers the loaded themes with the app and reloads them when their files change."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.theme import Theme

if TYPE_CHECKING:
    from textual.app import App


from .files import (
    LoadedTheme,
    ThemeFileError,
    ThemeLoadError,
    load_theme_dirs,
    load_theme_file,
    save_theme_choice,
    theme_dirs,
    theme_files,
)
from .variables import ANSI_CLASS, DEFAULT_THEME

# --------------------------------------------------------------------------- manager


def _snapshot(dirs: Sequence[Path]) -> dict[Path, tuple[int, int]]:
    state: dict[Path, tuple[int, int]] = {}
    for directory in dirs:
        for path in theme_files(directory):
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
        ui: App[Any],
        *,
        dirs: Sequence[Path] | None = None,
        config_path: Path | None = None,
        persist: bool = True,
        watch: bool = True,
        poll_interval: float = 1.0,
        load_after: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        """``load_after``: what a deferred ``install`` waits for, after the first frame, before it
        reads the theme files (the app: a message typed at start has gone to the model)."""
        self.ui = ui
        self.load_after = load_after
        #: set once a deferred ``install`` has read the theme files (the watcher polls after it:
        #: before, every file would look new and be read twice)
        self._files_read = asyncio.Event()
        self._files_read.set()
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
        if current is None and name in self.ui.available_themes:
            self._shadowed[name] = self.ui.available_themes[name]
        self.file_themes[name] = loaded
        self.ui.register_theme(loaded.theme)
        return True

    def _drop(self, name: str, path: Path) -> bool:
        """``path`` no longer defines ``name``: unregister it or fall back to another source.

        The theme in use is kept registered (it just stops following its file).
        """
        current = self.file_themes.get(name)
        if current is None or current.path != path or name == self.ui.theme:
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
            self.ui.register_theme(self._shadowed.pop(name))
        else:
            self.ui.unregister_theme(name)
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
        return sorted(self.ui.available_themes)

    def apply(self, name: str) -> str:
        """Switch to ``name``; an unknown name falls back to the default with a warning."""
        if name not in self.ui.available_themes:
            self.ui.notify(
                f"Theme {name!r} is not available; using {DEFAULT_THEME!r}. "
                f"Themes: {', '.join(self.available_themes())}",
                title="Unknown theme",
                severity="warning",
                timeout=10,
            )
            name = DEFAULT_THEME
        self.ui.theme = name
        return name

    def report_errors(self) -> None:
        """One warning notification listing every theme file that was skipped."""
        if self.errors:
            self.ui.notify(
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
        if selected in self.ui.available_themes:
            applied = self.apply(selected)
            self._files_read.clear()
            self.start()
            self.ui.run_worker(self._load_later(), group="theme-load", exit_on_error=False)
            return applied
        self.load()
        applied = self.apply(selected)
        self.report_errors()
        self.start()
        return applied

    async def _load_later(self) -> None:
        # after the next frame (the first, at start): the files are validated with pydantic,
        # whose import would compete with that frame for the interpreter
        try:
            painted = asyncio.Event()
            self.ui.call_after_refresh(painted.set)
            await painted.wait()
            if self.load_after is not None:
                await self.load_after()
            was_ansi = self.ui.current_theme.ansi
            await self.load_async()
        finally:
            self._files_read.set()
        self.report_errors()
        if self.ui.theme in self.file_themes:  # a file overrides the built-in in use
            self._reapply(self.ui.theme, was_ansi)

    async def wait_loaded(self) -> None:
        """Wait until a deferred ``install`` has read the theme files (tests, scripts)."""
        await self.ui.workers.wait_for_complete(
            [worker for worker in self.ui.workers if worker.group == "theme-load"]
        )

    # ----------------------------------------------------------------- watching, persisting
    def start(self) -> None:
        """Persist future theme changes and start the file watcher (per the flags)."""
        if self._started:
            return
        self._started = True
        self._persisted = self.ui.theme  # the theme in place now came from the config
        self.ui.set_class(self.ui.current_theme.ansi, ANSI_CLASS)
        if not self._subscribed:
            # never unsubscribed: ``Signal.unsubscribe(app)`` would drop the app's other callbacks
            self._subscribed = True
            self.ui.theme_changed_signal.subscribe(self.ui, self._on_theme_changed, immediate=True)
        if self.watch:
            self.ui.run_worker(
                self._watch_loop(), name="theme-watcher", group="theme-watcher",
                exclusive=True, exit_on_error=False,
            )

    def stop(self) -> None:
        if not self._started:
            return
        self._started = False
        self.ui.workers.cancel_group(self.ui, "theme-watcher")

    async def _watch_loop(self) -> None:
        await self._files_read.wait()
        while True:
            await asyncio.sleep(self.poll_interval)
            await self.check_for_changes()

    async def check_for_changes(self) -> list[str]:
        """One poll: re-read changed files; returns the theme names (re)registered or dropped."""
        stamps, changes = await asyncio.to_thread(_read_changes, self.dirs, self._stamps)
        self._stamps = stamps
        touched: list[str] = []
        current = self.ui.theme
        was_ansi = self.ui.current_theme.ansi
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
            self.ui.notify(
                "\n".join(f"{error} (previous version kept)" for error in changes.errors),
                title="Theme file not reloaded",
                severity="warning",
                timeout=10,
            )
        if reapply:
            self._reapply(current, was_ansi)
        return touched

    def _reapply(self, name: str, was_ansi: bool) -> None:
        theme = self.ui.get_theme(name)
        if theme is None:
            return
        if theme.ansi != was_ansi:
            # the ANSI colour filter is only rebuilt by a real theme switch
            self.ui.theme = DEFAULT_THEME if name != DEFAULT_THEME else "textual-light"
            self.ui.theme = name
            return
        self.ui.refresh_css(animate=False)
        self.ui.theme_changed_signal.publish(theme)

    def _on_theme_changed(self, theme: Theme) -> None:
        if not self._started or theme.name != self.ui.theme:
            return
        self.ui.set_class(theme.ansi, ANSI_CLASS)
        name = theme.name
        if not self.persist or name == self._persisted:
            return
        self._persisted = name
        self._wanted = name
        self.ui.run_worker(self._persist(), group="theme-persist", exit_on_error=False)

    async def _persist(self) -> None:
        from ..config_writer import ConfigWriteError

        try:
            await asyncio.to_thread(self._write_wanted)
        except ConfigWriteError as exc:
            self.ui.notify(str(exc), title="Theme choice not saved", severity="warning", timeout=10)

    def _write_wanted(self) -> None:
        with self._write_lock:  # the latest choice wins even if two writes overlap
            if self._wanted is not None:
                save_theme_choice(self._wanted, self.config_path)

    async def wait_persisted(self) -> None:
        """Wait until pending writes of the theme choice are done (tests, scripts)."""
        await self.ui.workers.wait_for_complete(
            [worker for worker in self.ui.workers if worker.group == "theme-persist"]
        )
