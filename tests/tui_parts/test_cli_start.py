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
