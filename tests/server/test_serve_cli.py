"""``instance-ai serve`` argument checks (before anything is started)."""

from __future__ import annotations

import pytest

from instance_ai_tui.cli import build_parser
from instance_ai_tui.cli.serve import main


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.8.0.1", "localhost.localdomain", "app.localhost"])
def test_a_loopback_host_needs_no_token(host: str, capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """serve asks web.access.is_loopback, the one loopback check (``instance-ai web`` asks it too):
    the last two names were refused without a token while serve had its own check ("localhost"
    or an address only). The port after it is invalid, so nothing is started."""
    monkeypatch.delenv("INSTANCE_AI_TOKEN", raising=False)
    assert main(build_parser().parse_args(["serve", "--host", host, "--port", "70000"])) == 2
    assert "invalid port" in capsys.readouterr().err


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.invalid"])
def test_another_host_needs_a_token(host: str, capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INSTANCE_AI_TOKEN", raising=False)
    assert main(build_parser().parse_args(["serve", "--host", host, "--port", "70000"])) == 2
    assert f"refusing to listen on {host} without a token" in capsys.readouterr().err


def test_refuses_a_public_host_without_a_token(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("INSTANCE_AI_TOKEN", raising=False)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0"])
    assert args.port == 5680 and args.host == "0.0.0.0"
    assert main(args) == 2
    assert "refusing to listen on 0.0.0.0 without a token" in capsys.readouterr().err
    bad_port = build_parser().parse_args(["serve", "--port", "70000"])
    assert main(bad_port) == 2 and "invalid port" in capsys.readouterr().err


@pytest.mark.parametrize("token", ["   ", "", " s3cret", "a b", "tok\x1b[2J"])
def test_refuses_a_blank_or_spaced_token(token: str, capsys: pytest.CaptureFixture[str],
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """A whitespace-only --token used to be accepted (and then every request failed with 401)."""
    monkeypatch.delenv("INSTANCE_AI_TOKEN", raising=False)
    args = build_parser().parse_args(["serve", "--host", "0.0.0.0", "--token", token])
    assert main(args) == 2
    assert "must not be blank" in capsys.readouterr().err
    monkeypatch.setenv("INSTANCE_AI_TOKEN", token)
    assert main(build_parser().parse_args(["serve", "--host", "0.0.0.0"])) == 2
