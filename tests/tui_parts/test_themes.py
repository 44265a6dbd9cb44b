from __future__ import annotations

import os
import tomllib
from pathlib import Path

import pytest
from textual.app import App, ComposeResult
from textual.theme import BUILTIN_THEMES
from textual.widgets import Static

from instance_ai_tui.tui.themes.files import (
    ThemeFileError,
    builtin_themes_dir,
    load_theme_dirs,
    load_theme_file,
    save_theme_choice,
    theme_dirs,
)
from instance_ai_tui.tui.themes.glyphs import SEVERITY, TASK_STATUS, TOOL_STATUS
from instance_ai_tui.tui.themes.manager import ThemeManager
from instance_ai_tui.tui.themes.variables import ANSI_CLASS, APP_VARIABLES, app_variable_defaults
from tests.support.waiting import until

REPO_THEMES = Path(__file__).resolve().parents[2] / "instance_ai_tui" / "tui" / "themes_builtin"
SHIPPED = {"instance-dark", "instance-light", "instance-high-contrast", "instance-ansi"}

GOOD = """\
name: {name}
primary: "{primary}"
background: "#101010"
app:
  tool-failed: "$error"
  tool-done: "#00ff00 50%"
"""


def write(directory: Path, filename: str, text: str) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / filename
    path.write_text(text, encoding="utf-8")
    return path


class ThemedApp(App[None]):
    CSS = "#probe { color: $tool-failed; background: $user-message-background; }"

    def __init__(self) -> None:
        super().__init__()
        self.notes: list[str] = []

    def notify(self, message: str, **kwargs: object) -> None:  # type: ignore[override]
        self.notes.append(f"{kwargs.get('title', '')}: {message}")
        super().notify(message, **kwargs)  # type: ignore[arg-type]

    def get_theme_variable_defaults(self) -> dict[str, str]:
        return app_variable_defaults(self.current_theme)

    def compose(self) -> ComposeResult:
        yield Static(TOOL_STATUS["failed"].markup(), id="probe")


# --------------------------------------------------------------------------- files


def test_shipped_themes_load_and_define_every_app_variable() -> None:
    loaded, errors = load_theme_dirs([REPO_THEMES])
    assert errors == []
    assert SHIPPED <= set(loaded)
    for item in loaded.values():
        assert set(APP_VARIABLES) <= set(item.theme.variables)
        assert not any(value.startswith("$") for value in item.theme.variables.values())
    assert loaded["instance-ansi"].theme.ansi is True
    assert all(v.startswith("ansi_") for k, v in loaded["instance-ansi"].theme.variables.items() if k in APP_VARIABLES)
    assert loaded["instance-light"].theme.dark is False


def test_the_app_reads_its_one_themes_folder() -> None:
    """Issue 46 item 5: the themes were kept twice (``themes/`` and its package copy, a test holding them
    equal); the package's folder is the one, in a checkout and installed."""
    assert theme_dirs()[0] == builtin_themes_dir() == REPO_THEMES
    assert sorted(p.name for p in REPO_THEMES.glob("*.yaml")) == [
        "instance-ansi.yaml", "instance-dark.yaml", "instance-high-contrast.yaml", "instance-light.yaml"]
    assert not (REPO_THEMES.parents[2] / "themes").exists()


def test_references_and_alpha_are_resolved(tmp_path: Path) -> None:
    path = write(tmp_path, "x.yaml", GOOD.format(name="mine", primary="#123456") + '  agent-border: "$secondary"\n')
    theme = load_theme_file(path).theme
    generated = theme.to_color_system().generate()
    assert theme.variables["tool-failed"] == generated["error"]
    assert theme.variables["tool-done"] == "#00ff00 50%"
    assert theme.variables["agent-border"] == generated["secondary"]
    assert theme.variables["tool-running"] == generated["primary"]  # derived default


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("name: [unclosed\n", "invalid YAML at line 2, column 1"),
        ("name: x\nprimary: red\n  bad: indent\n", "invalid YAML at line 3"),
        ("- a\n- b\n", "must be a YAML mapping"),
        ("name: x\n", "primary: Field required"),
        ('name: x\nprimary: "#12345g"\n', "primary: '#12345g' is not a colour"),
        ('name: x\nprimary: red\ncolour: blue\n', "colour: Extra inputs are not permitted"),
        ('name: x\nprimary: red\napp:\n  tool-fialed: red\n', "unknown app variable(s) tool-fialed"),
        ('name: x\nprimary: red\napp:\n  tool-failed: "$nope"\n', "unknown variable $nope"),
        ('name: x\nprimary: red\napp:\n  tool-failed: "red 140%"\n', "alpha must be 0-100%"),
        ('name: "bad name!"\nprimary: red\n', "not a valid theme name"),
    ],
)
def test_bad_file_gives_a_clear_error(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "broken.yaml", text)
    with pytest.raises(ThemeFileError) as info:
        load_theme_file(path)
    assert message in str(info.value)
    assert str(path) in str(info.value)


def test_broken_files_are_skipped_and_reported(tmp_path: Path) -> None:
    write(tmp_path, "a.yaml", GOOD.format(name="one", primary="#111111"))
    write(tmp_path, "b.yml", "name: [\n")
    write(tmp_path, "c.yaml", GOOD.format(name="one", primary="#222222"))
    write(tmp_path, "notes.txt", "ignored")
    loaded, errors = load_theme_dirs([tmp_path])
    assert list(loaded) == ["one"] and loaded["one"].path.name == "a.yaml"
    assert [(e.path.name, e.message.split(":")[0]) for e in errors] == [
        ("b.yml", "invalid YAML at line 2, column 1"),
        ("c.yaml", "theme name 'one' is already used by a.yaml"),
    ]


def test_defaults_for_builtin_textual_themes() -> None:
    values = app_variable_defaults(BUILTIN_THEMES["nord"])
    generated = BUILTIN_THEMES["nord"].to_color_system().generate()
    assert values["tool-failed"] == generated["error"]
    assert values["severity-info"] == generated["primary"]
    assert set(values) == set(APP_VARIABLES)
    assert app_variable_defaults(BUILTIN_THEMES["nord"]) is values  # cached


def test_status_marks_carry_glyph_and_word() -> None:
    for table in (TOOL_STATUS, TASK_STATUS, SEVERITY):
        for mark in table.values():
            assert mark.glyph and mark.label and mark.variable in APP_VARIABLES
            assert mark.markup() == f"[${mark.variable}]{mark.glyph} {mark.label}[/]"
    glyphs = {TOOL_STATUS[s].glyph for s in ("running", "done", "failed", "waiting")}
    assert len(glyphs) == 4  # distinguishable without colour
    assert TOOL_STATUS["awaiting"] is TOOL_STATUS["waiting"]


# --------------------------------------------------------------------------- manager in an app


async def test_manager_registers_applies_and_persists(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text('# keep me\n[model]\nname = "demo"\n\n[ui]\ntheme = "instance-dark"\nenter_sends = false\n')
    user = tmp_path / "user-themes"
    write(user, "mine.yaml", GOOD.format(name="mine", primary="#336699"))
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[REPO_THEMES, user], config_path=config, watch=False)
        assert manager.install("instance-dark") == "instance-dark"
        await pilot.pause()
        assert SHIPPED | {"mine", "nord", "textual-dark"} <= set(manager.available_themes())
        probe = app.query_one("#probe", Static)
        assert probe.styles.color.hex.lower() == "#ef6b73"
        assert config.read_text().startswith("# keep me")  # applying the configured theme writes nothing

        app.theme = "mine"
        await pilot.pause()
        await manager.wait_persisted()
        data = tomllib.loads(config.read_text())
        assert data == {"model": {"name": "demo"}, "ui": {"theme": "mine", "enter_sends": False}}
        assert config.read_text().startswith("# keep me")


async def test_unknown_selected_theme_falls_back_with_notification(tmp_path: Path) -> None:
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[REPO_THEMES], config_path=tmp_path / "c.toml", watch=False)
        assert manager.install("no-such-theme") == "textual-dark"
        await pilot.pause()
        assert app.theme == "textual-dark"
        assert any("'no-such-theme' is not available" in m for m in app.notes)
        assert not (tmp_path / "c.toml").exists()  # the fallback is not persisted


async def test_broken_file_is_notified_and_the_rest_loads(tmp_path: Path) -> None:
    write(tmp_path, "ok.yaml", GOOD.format(name="fine", primary="#224466"))
    write(tmp_path, "bad.yaml", 'name: bad\nprimary: "not-a-colour"\n')
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[tmp_path], persist=False, watch=False)
        manager.install("fine")
        await pilot.pause()
        assert app.theme == "fine"
        assert [e.path.name for e in manager.errors] == ["bad.yaml"]
        assert any("bad.yaml" in n and "is not a colour" in n and "skipped" in n for n in app.notes)


async def test_user_dir_overrides_repo_and_builtin_of_same_name(tmp_path: Path) -> None:
    repo, user = tmp_path / "repo", tmp_path / "user"
    write(repo, "a.yaml", GOOD.format(name="shared", primary="#111111"))
    write(user, "b.yaml", GOOD.format(name="shared", primary="#222222"))
    write(user, "nord.yaml", GOOD.format(name="nord", primary="#333333"))
    app = ThemedApp()
    async with app.run_test():
        manager = ThemeManager(app, dirs=[repo, user], persist=False, watch=False)
        manager.load()
        assert app.get_theme("shared").primary == "#222222"
        assert app.get_theme("nord").primary == "#333333"
        # removing the user file falls back to the repo one; removing nord restores Textual's
        (user / "b.yaml").unlink()
        (user / "nord.yaml").unlink()
        touched = await manager.check_for_changes()
        assert sorted(touched) == ["nord", "shared"]
        assert app.get_theme("shared").primary == "#111111"
        assert app.get_theme("nord") is BUILTIN_THEMES["nord"]


async def test_check_for_changes_reloads_and_reapplies_current_theme(tmp_path: Path) -> None:
    path = write(tmp_path, "live.yaml", GOOD.format(name="live", primary="#111111").replace("$error", "#aa0000"))
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[tmp_path], persist=False, watch=False)
        manager.install("live")
        await pilot.pause()
        probe = app.query_one("#probe", Static)
        assert probe.styles.color.hex.lower() == "#aa0000"

        assert await manager.check_for_changes() == []  # nothing changed
        path.write_text(GOOD.format(name="live", primary="#111111").replace("$error", "#00bb00"))
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        assert await manager.check_for_changes() == ["live"]
        await pilot.pause()
        assert app.theme_variables["tool-failed"] == "#00bb00"
        assert probe.styles.color.hex.lower() == "#00bb00"

        # a broken edit keeps the previous version and says so
        path.write_text("name: live\nprimary: nope\n")
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 2 * 10**9))
        assert await manager.check_for_changes() == []
        assert app.get_theme("live").variables["tool-failed"] == "#00bb00"
        assert any("previous version kept" in n for n in app.notes)

        # a new file appears
        write(tmp_path, "new.yaml", GOOD.format(name="fresh", primary="#445566"))
        assert await manager.check_for_changes() == ["fresh"]
        assert "fresh" in manager.available_themes()


async def test_watcher_worker_picks_up_an_edit(tmp_path: Path) -> None:
    path = write(tmp_path, "w.yaml", GOOD.format(name="watched", primary="#111111").replace("$error", "#aa0000"))
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[tmp_path], persist=False, poll_interval=0.05)
        manager.install("watched")
        await pilot.pause()
        path.write_text(GOOD.format(name="watched", primary="#111111").replace("$error", "#0000cc"))
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        await until(lambda: app.theme_variables.get("tool-failed") == "#0000cc", pilot, what="the edited theme reloaded")
        manager.stop()
        await pilot.pause()
        assert not [w for w in app.workers if w.group == "theme-watcher" and not w.is_finished]


async def test_switching_ansi_flag_on_reload(tmp_path: Path) -> None:
    path = write(tmp_path, "a.yaml", 'name: flip\nprimary: "#336699"\n')
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[tmp_path], persist=False, watch=False)
        manager.install("flip")
        await pilot.pause()
        assert app.native_ansi_color is False
        path.write_text("name: flip\nansi: true\nprimary: ansi_blue\n")
        os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 10**9))
        await manager.check_for_changes()
        await pilot.pause()
        assert app.theme == "flip" and app.native_ansi_color is True


async def test_persist_failure_is_notified(tmp_path: Path) -> None:
    config = tmp_path / "config.toml"
    config.write_text("[ui\n")  # broken: must not be overwritten
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[REPO_THEMES], config_path=config, watch=False)
        manager.install("instance-dark")
        app.theme = "instance-light"
        await pilot.pause()
        await manager.wait_persisted()
        await pilot.pause()
        assert any("not valid TOML" in n for n in app.notes)
        assert config.read_text() == "[ui\n"


def test_save_theme_choice_uses_config_path(tmp_path: Path) -> None:
    save_theme_choice("instance-ansi")
    config = Path(os.environ["INSTANCE_AI_CONFIG"])
    assert tomllib.loads(config.read_text()) == {"ui": {"theme": "instance-ansi"}}


async def test_every_shipped_theme_applies_cleanly(tmp_path: Path) -> None:
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[REPO_THEMES], persist=False, watch=False)
        manager.load()
        assert manager.errors == []
        probe = app.query_one("#probe", Static)
        for name in sorted(SHIPPED):
            app.theme = name
            await pilot.pause()
            assert app.theme_variables["tool-failed"] == manager.file_themes[name].theme.variables["tool-failed"]
            assert probe.render_line(0).text.startswith("✗ failed")


async def test_install_with_builtin_reads_files_in_the_background(tmp_path: Path) -> None:
    write(tmp_path, "override.yaml", GOOD.format(name="textual-dark", primary="#123456").replace("$error", "#abcdef"))
    write(tmp_path, "bad.yaml", "name: [\n")
    app = ThemedApp()
    async with app.run_test() as pilot:
        manager = ThemeManager(app, dirs=[tmp_path], persist=False, watch=False)
        assert manager.install("textual-dark") == "textual-dark"
        assert app.theme == "textual-dark"
        await manager.wait_loaded()
        await pilot.pause()
        assert app.get_theme("textual-dark").primary == "#123456"
        assert app.theme_variables["tool-failed"] == "#abcdef"  # the override was re-applied
        assert any("bad.yaml" in note for note in app.notes)


async def test_ansi_class_follows_the_theme_and_other_subscribers_survive_stop(tmp_path: Path) -> None:
    app = ThemedApp()
    seen: list[str] = []
    async with app.run_test() as pilot:
        app.theme_changed_signal.subscribe(app, lambda theme: seen.append(theme.name))
        manager = ThemeManager(app, dirs=[REPO_THEMES], config_path=tmp_path / "c.toml", watch=False)
        manager.install("instance-dark")
        await pilot.pause()
        assert not app.has_class(ANSI_CLASS)
        app.theme = "instance-ansi"
        await pilot.pause()
        assert app.has_class(ANSI_CLASS)
        app.theme = "instance-light"
        await pilot.pause()
        assert not app.has_class(ANSI_CLASS)
        manager.stop()
        app.theme = "nord"
        await pilot.pause()
        assert seen[-1] == "nord"  # the app's own subscription is still there
        await manager.wait_persisted()
        assert tomllib.loads((tmp_path / "c.toml").read_text())["ui"]["theme"] == "instance-light"  # stopped


def test_readme_example_theme_is_valid(tmp_path: Path) -> None:
    import re

    text = (REPO_THEMES / "README.md").read_text(encoding="utf-8")
    example = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert example is not None
    theme = load_theme_file(write(tmp_path, "example.yaml", example.group(1))).theme
    assert theme.name == "my-theme"
    assert set(APP_VARIABLES) <= set(theme.variables)
