from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from instance_ai_tui.tui.config_writer import ConfigWriteError, dumps, set_config_value

KEY = ("ui", "theme")


def test_missing_file_is_created(tmp_path: Path) -> None:
    path = tmp_path / "sub" / "config.toml"
    assert set_config_value(path, KEY, "nord") is True
    assert tomllib.loads(path.read_text()) == {"ui": {"theme": "nord"}}


def test_replaces_value_and_keeps_comments_and_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    original = (
        "# my settings\n"
        'db_path = "/data/x.sqlite3"\n'
        "\n"
        "[model]\n"
        'name = "gpt-4o-mini"  # cheap\n'
        "\n"
        "[ui]\n"
        "# the look\n"
        'theme = "textual-dark"   # old\n'
        "enter_sends = false\n"
        "\n"
        "[ui.keys]\n"
        'approve = "y"\n'
    )
    path.write_text(original)
    assert set_config_value(path, KEY, "instance-ansi") is True
    text = path.read_text()
    assert "# my settings" in text and "# the look" in text and "# cheap" in text
    data = tomllib.loads(text)
    assert data == {
        "db_path": "/data/x.sqlite3",
        "model": {"name": "gpt-4o-mini"},
        "ui": {"theme": "instance-ansi", "enter_sends": False, "keys": {"approve": "y"}},
    }
    assert text.count("theme =") == 1


def test_inserts_into_existing_table(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ui]\nenter_sends = true\n\n[model]\nname = "demo"\n')
    set_config_value(path, KEY, "nord")
    data = tomllib.loads(path.read_text())
    assert data == {"ui": {"enter_sends": True, "theme": "nord"}, "model": {"name": "demo"}}


def test_appends_table_when_only_a_subtable_exists(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('[ui.keys]\nquit = "ctrl+x"\n')
    set_config_value(path, KEY, "nord")
    assert tomllib.loads(path.read_text()) == {"ui": {"keys": {"quit": "ctrl+x"}, "theme": "nord"}}


def test_inline_table_falls_back_to_rewrite_without_losing_values(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('# comment\nui = { theme = "a", enter_sends = false }\n[remote]\nurl = "http://x"\n')
    assert set_config_value(path, KEY, "b \"quoted\" \\ value") is False
    assert tomllib.loads(path.read_text()) == {
        "ui": {"theme": 'b "quoted" \\ value', "enter_sends": False},
        "remote": {"url": "http://x"},
    }


def test_broken_file_is_refused_and_left_untouched(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[ui\ntheme = \n")
    with pytest.raises(ConfigWriteError, match="not valid TOML"):
        set_config_value(path, KEY, "nord")
    assert path.read_text() == "[ui\ntheme = \n"


def test_keeps_file_mode(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text("[ui]\n")
    os.chmod(path, 0o600)
    set_config_value(path, KEY, "nord")
    assert path.stat().st_mode & 0o777 == 0o600
    assert [p.name for p in tmp_path.iterdir()] == ["config.toml"]  # no temp file left


def test_scalar_where_a_table_is_needed(tmp_path: Path) -> None:
    path = tmp_path / "config.toml"
    path.write_text('ui = "oops"\n')
    with pytest.raises(ConfigWriteError, match="not a table"):
        set_config_value(path, KEY, "nord")


_keys = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8)
_scalars = st.one_of(
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
    st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=20),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(_keys, inner, max_size=3)),
    max_leaves=10,
)


@settings(max_examples=150, deadline=None)
@given(st.dictionaries(_keys, _values, max_size=5))
def test_dumps_round_trips(data: dict) -> None:
    assert tomllib.loads(dumps(data)) == data
