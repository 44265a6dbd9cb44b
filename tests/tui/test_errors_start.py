"""Start-up failures are shown, not hung (issue 26): a database that cannot open, or a --thread that
does not exist, gives the start-failure screen (part, cause, fix) and exit code 2."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from instance_ai_tui.client.base import ConnectionState
from instance_ai_tui.client.embedded import EmbeddedClient
from instance_ai_tui.config import Settings
from instance_ai_tui.tui.app import InstanceAiApp
from instance_ai_tui.tui.screens.start_failure import StartFailureScreen
from instance_ai_tui.tui.startup import FirstFramePrefs, Started, Startup
from tests.support.waiting import until

from .scripts import SIZE


def app_on(db: Path, thread_id: str | None = None) -> InstanceAiApp:
    async def load() -> Started:
        settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
        return Started(EmbeddedClient(settings, demo_delay=0.002), settings)

    return InstanceAiApp(startup=Startup(FirstFramePrefs(), load), thread_id=thread_id, watch_themes=False,
                         persist_theme=False)


async def failure_screen(app: InstanceAiApp, pilot: Any, timeout: float = 20.0) -> StartFailureScreen:
    # the screen is pushed, then composed
    await until(lambda: isinstance(app.screen, StartFailureScreen) and bool(app.screen.query("#start-failure-message")),
                pilot, timeout, "the start-failure screen")
    assert isinstance(app.screen, StartFailureScreen)
    return app.screen


def shown(screen: StartFailureScreen) -> str:
    title = screen.query_one("#start-failure-title").render()
    message = screen.query_one("#start-failure-message").render()
    return f"{title}\n{message}"


async def test_a_corrupt_database_gives_the_clear_screen_and_exit_code_2(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    db.write_bytes(b"this is not a database, it is a shopping list\n" * 200)
    app = app_on(db)
    async with app.run_test(size=SIZE) as pilot:
        screen = await failure_screen(app, pilot)
        words = shown(screen)
        assert "The database is damaged" in words
        assert str(db) in words and "move it aside" in words and "--db" in words
        await pilot.press("q")
    assert app.return_code == 2
    assert app.start_error is not None and str(db) in app.start_error


async def test_a_locked_database_names_the_other_program(tmp_path: Path) -> None:
    db = tmp_path / "db.sqlite3"
    holder = sqlite3.connect(db, isolation_level=None)
    holder.execute("PRAGMA journal_mode=DELETE")
    holder.execute("CREATE TABLE t (x)")
    holder.execute("BEGIN EXCLUSIVE")  # another program holds the file
    try:
        import instance_ai_tui.store.sqlite as sqlite_store

        original = sqlite_store.SqliteStore.__init__

        def short_wait(self: Any, *args: Any, **kwargs: Any) -> None:
            original(self, *args, **kwargs)
            self._busy_timeout = 0.2  # the default waits 5 s before it gives up

        sqlite_store.SqliteStore.__init__ = short_wait  # type: ignore[method-assign]
        try:
            app = app_on(db)
            async with app.run_test(size=SIZE) as pilot:
                screen = await failure_screen(app, pilot)
                words = shown(screen)
                assert "in use by another program" in words and "locked" in words and str(db) in words
                await pilot.press("escape")
        finally:
            sqlite_store.SqliteStore.__init__ = original  # type: ignore[method-assign]
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert app.return_code == 2


@contextlib.contextmanager
def read_only(folder: Path) -> Iterator[None]:
    """``folder`` cannot be written: mode 0500, and for root (who ignores modes) the immutable flag."""
    folder.chmod(0o500)
    immutable = os.geteuid() == 0
    if immutable and subprocess.run(["chattr", "+i", str(folder)], capture_output=True).returncode != 0:
        folder.chmod(0o700)
        pytest.skip("root, and chattr +i does not work here")
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-i", str(folder)], check=False)
        folder.chmod(0o700)


async def test_a_read_only_folder_names_the_permissions(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    folder.mkdir()
    with read_only(folder):
        app = app_on(folder / "db.sqlite3")
        async with app.run_test(size=SIZE) as pilot:
            words = shown(await failure_screen(app, pilot))
            assert "The database cannot be written" in words and "permissions" in words and str(folder) in words
            await pilot.press("q")
    assert app.return_code == 2


async def test_an_unknown_thread_id_is_refused_not_opened(tmp_path: Path) -> None:
    app = app_on(tmp_path / "db.sqlite3", thread_id="no-such-thread")
    async with app.run_test(size=SIZE) as pilot:
        words = shown(await failure_screen(app, pilot))
        assert "No such thread" in words and "'no-such-thread'" in words and "instance-ai threads" in words
        await pilot.press("enter")
    assert app.return_code == 2


class _BrokenPreload(EmbeddedClient):
    """A client whose optional preload raises, as ``import sniffio`` did in a fresh venv whose anyio no
    longer depends on it (seen with the README's first command: the app said "connecting" for ever)."""

    def preload(self) -> None:
        raise ModuleNotFoundError("No module named 'sniffio'")


class _BrokenOpen(EmbeddedClient):
    async def open(self) -> None:
        raise RuntimeError("the runtime fell over")


def app_with(client_type: type[EmbeddedClient], db: Path) -> InstanceAiApp:
    async def load() -> Started:
        settings = Settings.model_validate({"model": {"name": "demo"}, "db_path": db})
        return Started(client_type(settings, demo_delay=0.002), settings)

    return InstanceAiApp(startup=Startup(FirstFramePrefs(), load), watch_themes=False, persist_theme=False)


async def test_a_preload_that_fails_does_not_stop_the_start(tmp_path: Path) -> None:
    app = app_with(_BrokenPreload, tmp_path / "db.sqlite3")
    async with app.run_test(size=SIZE):
        await app.wait_until_ready()
        assert app.client.state == ConnectionState.EMBEDDED and app.start_error is None
        assert not isinstance(app.screen, StartFailureScreen)


async def test_an_unexpected_error_at_start_is_shown_with_its_part_not_a_hang(tmp_path: Path) -> None:
    app = app_with(_BrokenOpen, tmp_path / "db.sqlite3")
    async with app.run_test(size=SIZE) as pilot:
        screen = await failure_screen(app, pilot)
        words = shown(screen)
        assert "The start-up failed" in words and "RuntimeError" in words and "the runtime fell over" in words
        assert "instance-ai.log" in words
        await pilot.press("q")
    assert app.return_code == 2


def test_the_http_warm_up_never_raises_for_a_module_that_is_not_installed(monkeypatch: pytest.MonkeyPatch) -> None:
    """anyio 4.12 and httpx no longer depend on sniffio: a fresh `pip install -e .` may not have it."""
    import sys

    from instance_ai_tui.client.remote import warm_http_stack

    monkeypatch.setitem(sys.modules, "sniffio", None)  # `import sniffio` raises ModuleNotFoundError
    warm_http_stack()
