"""``instance-ai serve`` argument checks (before anything is started)."""

from __future__ import annotations

import pytest

from instance_ai_tui.cli import build_parser
from instance_ai_tui.cli.serve import is_loopback, main


def test_loopback_detection() -> None:
    assert is_loopback("127.0.0.1") and is_loopback("localhost") and is_loopback("::1") and is_loopback("127.8.0.1")
    assert not is_loopback("0.0.0.0") and not is_loopback("192.168.1.10") and not is_loopback("example.com")


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
