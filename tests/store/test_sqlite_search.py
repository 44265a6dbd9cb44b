"""Thread search is full text: it finds the words users and the assistant wrote, not only titles."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from instance_ai_tui.store.sqlite import SqliteStore, fts_query
from instance_ai_tui.store.sqlite_schema import MIGRATIONS, migrate

from .test_sqlite_records import message


async def _seed(store: SqliteStore) -> None:
    await store.create_thread("weather", title="Morning report")
    await store.create_thread("backup", title="Nightly backup")
    await store.create_thread("other", title="Something else")
    await store.upsert_messages("weather", [
        message("u1", "Send the forecast to our Slack channel", "weather"),
        message("a1", "Done: the Slack node posts at 7:00.", "weather", role="assistant"),
        message("t1", "slack tool output", "weather", role="tool"),  # tool output is not searched
    ])
    await store.upsert_messages("backup", [message("u2", "Back up Postgres every night, Ünïcode Straße", "backup")])
    await store.upsert_messages("other", [message("t2", "slack mentioned only by a tool", "other", role="tool")])


async def test_search_finds_message_text_not_only_titles(store: SqliteStore) -> None:
    await _seed(store)
    assert [t.id for t in await store.list_threads(search="slack")] == ["weather"]
    assert [t.id for t in await store.list_threads(search="SLA")] == ["weather"]  # word prefix
    assert [t.id for t in await store.list_threads(search="slack posts")] == ["weather"]  # every word
    assert await store.list_threads(search="slack postgres") == []  # ... in one message
    assert [t.id for t in await store.list_threads(search="postgres")] == ["backup"]
    assert [t.id for t in await store.list_threads(search="unicode")] == ["backup"]  # diacritics folded
    assert [t.id for t in await store.list_threads(search="nightly")] == ["backup"]  # the title still counts
    # FTS5 syntax in the input is text, never a query error
    for hostile in ['"', "NEAR(a b)", "slack OR backup", "*", "a:b", "-slack", "(", "^x"]:
        await store.list_threads(search=hostile)


async def test_edits_and_deletes_keep_the_index_in_step(store: SqliteStore) -> None:
    await _seed(store)
    await store.upsert_messages("weather", [message("u1", "Send the forecast to Teams", "weather"),
                                            message("a1", "Done.", "weather", role="assistant")])
    assert await store.list_threads(search="slack") == []
    assert [t.id for t in await store.list_threads(search="teams")] == ["weather"]
    await store.delete_thread("weather")
    assert await store.list_threads(search="teams") == []


def test_fts_query_quotes_every_word() -> None:
    assert fts_query('say "hi" NEAR(x)') == '"say"* "hi"* "NEAR"* "x"*'
    assert fts_query("!!!") == ""


def test_migration_indexes_existing_messages(tmp_path: Path) -> None:
    db = sqlite3.connect(tmp_path / "old.sqlite3", isolation_level=None)
    migrate(db, target=2)
    db.execute("INSERT INTO threads VALUES ('t', 'x', '{}', '2025-01-01', '2025-01-01')")
    db.execute("INSERT INTO messages VALUES ('t', 'm', 1, 'user', '\"hello slack\"', NULL, '2025-01-01', '{}')")
    migrate(db, target=len(MIGRATIONS))
    assert db.execute("SELECT thread_id FROM message_text WHERE message_text MATCH 'slack'").fetchall() == [("t",)]
