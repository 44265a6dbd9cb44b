"""``instance-ai`` builds only the parser of the command it runs (start-up time), and reads
exactly as the full parser does."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from instance_ai_tui import __version__, cli

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ([], None),
        (["--model", "demo"], None),
        (["--help"], None),
        (["--version"], None),
        (["serve", "--port", "8080"], "serve"),
        (["--db", "x.sqlite3", "--model", "demo", "run", "hello", "--json"], "run"),
        (["threads", "--help"], "threads"),
        (["--url", "http://127.0.0.1:1", "export", "t1", "--format", "json"], "export"),
        (["replay", "--whatever-it-takes"], "replay"),
        (["bogus"], None),
        (["--dialect", "nope", "serve"], None),  # the real parser reports the bad value
    ],
)
def test_the_chosen_command_is_found_without_its_module(argv: list[str], expected: str | None) -> None:
    assert cli.chosen_command(argv) == expected


def test_a_partial_parser_reads_like_the_full_one() -> None:
    full = cli.build_parser()
    assert cli.build_parser(()).format_help() == full.format_help()
    for name in cli.COMMANDS:
        partial = cli.build_parser((name,))
        assert _sub(partial, name).format_help() == _sub(full, name).format_help()


def _sub(parser: object, name: str) -> object:
    for action in parser._subparsers._group_actions:  # type: ignore[attr-defined]
        if name in getattr(action, "choices", {}):
            return action.choices[name]
    raise AssertionError(name)


def test_the_start_path_imports_no_sub_command_and_no_package_metadata() -> None:
    code = (
        "import json, sys\n"
        "before = set(sys.modules)\n"
        "from instance_ai_tui import cli\n"
        "cli.chosen_command(['--model', 'demo']); cli.build_parser(())\n"
        "print(json.dumps(sorted(set(sys.modules) - before)))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, check=True)
    imported = set(json.loads(result.stdout))
    assert "importlib.metadata" not in imported
    for module, _help in cli.COMMANDS.values():
        assert module not in imported
    assert not {name for name in imported if name.split(".")[0] in ("textual", "pydantic", "httpx")}


def test_version_and_help_from_the_command_line() -> None:
    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "instance_ai_tui", *args], capture_output=True, text=True, cwd=ROOT, env=_env()
        )

    version = run("--version")
    assert version.returncode == 0 and version.stdout.strip() == f"instance-ai {__version__}"
    serve_help = run("serve", "--help")
    assert serve_help.returncode == 0 and "--port" in serve_help.stdout
    bad = run("serve", "--port", "not-a-number")
    assert bad.returncode == 2 and "invalid int value" in bad.stderr


def _env() -> dict[str, str]:
    import os

    return {**os.environ, "COLUMNS": "100"}


def _run_in_pty(argv: list[str], env: dict[str, str], cwd: Path, timeout: float = 60.0) -> tuple[int, str]:
    """Run ``argv`` in a real pseudo-terminal (the TUI needs one); its exit code and output."""
    import os
    import pty
    import select
    import time

    master, slave = pty.openpty()
    process = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, env=env, cwd=cwd, close_fds=True)
    os.close(slave)
    output = b""
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 0.05)
            if ready:
                try:
                    data = os.read(master, 1 << 16)
                except OSError:
                    break
                if not data:
                    break
                output += data
            elif process.poll() is not None:
                break
        code = process.wait(timeout=max(1.0, deadline - time.monotonic()))
    finally:
        if process.poll() is None:
            process.kill()
        os.close(master)
    return code, output.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("[ui\ntheme = 'x'\n", "cannot read config file"),
        ("[ui]\nbell = 'loud'\n", "invalid settings (in"),
    ],
)
def test_a_settings_file_that_cannot_work_ends_the_app_with_its_reason(tmp_path: Path, config: str,
                                                                         message: str) -> None:
    """The settings are read after the first frame (``tui.startup``): a broken file still ends the
    app with exit code 2 and says why, in a real terminal."""
    import os

    path = tmp_path / "config.toml"
    path.write_text(config, encoding="utf-8")
    env = {**os.environ, "TERM": "xterm-256color", "INSTANCE_AI_CONFIG": str(path), "XDG_DATA_HOME": str(tmp_path),
           "XDG_CONFIG_HOME": str(tmp_path), "PYTHONPATH": str(ROOT)}
    code, output = _run_in_pty([sys.executable, "-m", "instance_ai_tui", "--new"], env, tmp_path)
    assert code == 2, output[-2000:]
    assert f"instance-ai: {message}" in output
    if "bell" in config:
        assert "ui.bell: Input should be a valid boolean" in output
