"""Two-factor login from the command line (issue 42.5): ``--mfa-code`` / ``N8N_MFA_CODE`` for ``run``,
``export`` and ``threads``, against the fake n8n (its login answers as n8n 2.41.1's ``validateMfa``:
401 ``code 998`` without a code, 401 with a wrong one). The same against the real n8n:
``tests/live_n8n/test_n8n_lifecycle_live.py``."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.support.fake_n8n import FakeN8n

ROOT = Path(__file__).resolve().parents[2]
CODE = "246810"


@pytest.fixture
async def mfa_fake() -> AsyncIterator[FakeN8n]:
    server = FakeN8n(ping_interval=0.5)
    await server.start()
    server.mfa_code = CODE
    try:
        yield server
    finally:
        await server.stop()


async def cli(tmp_path: Path, fake: FakeN8n, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    environ = {k: v for k, v in os.environ.items() if not k.startswith("N8N_")}
    environ.update({"INSTANCE_AI_CONFIG": str(tmp_path / "none.toml"), "XDG_CONFIG_HOME": str(tmp_path / "cfg"),
                    "XDG_DATA_HOME": str(tmp_path / "data"), "PYTHONPATH": str(ROOT),
                    "N8N_PASSWORD": fake.password, **(env or {})})
    command = [sys.executable, "-m", "instance_ai_tui", *args[:1], "--url", fake.base_url, "--email", fake.email,
               *args[1:]]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, cwd=tmp_path,
                                   timeout=120, env=environ, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("how", ["flag", "env"])
async def test_threads_run_and_export_log_in_with_the_code(mfa_fake: FakeN8n, tmp_path: Path, how: str) -> None:
    def code(*args: str) -> tuple[tuple[str, ...], dict[str, str]]:
        return ((*args, "--mfa-code", CODE), {}) if how == "flag" else (args, {"N8N_MFA_CODE": CODE})

    args, env = code("threads", "--json")
    listed = await cli(tmp_path, mfa_fake, *args, env=env)
    assert listed.returncode == 0, listed.stderr
    args, env = code("run", "--json", "list my workflows")
    ran = await cli(tmp_path, mfa_fake, *args, env=env)
    assert ran.returncode == 0, ran.stderr
    thread = next(iter(mfa_fake._threads))
    args, env = code("export", thread)
    exported = await cli(tmp_path, mfa_fake, *args, env=env)
    assert exported.returncode == 0 and "list my workflows" in exported.stdout, exported.stderr
    assert mfa_fake.logins == 3


async def test_without_the_code_each_command_says_how_to_give_it(mfa_fake: FakeN8n, tmp_path: Path) -> None:
    for args in (("threads",), ("run", "hello"), ("export", "00000000-0000-4000-8000-000000000000")):
        result = await cli(tmp_path, mfa_fake, *args)
        assert result.returncode != 0
        assert "two-factor code" in result.stderr and "--mfa-code" in result.stderr and "N8N_MFA_CODE" in result.stderr, \
            (args, result.stderr)
        assert "Traceback" not in result.stderr
    wrong = await cli(tmp_path, mfa_fake, "threads", "--mfa-code", "111111")
    assert wrong.returncode != 0 and "refused the two-factor code" in wrong.stderr, wrong.stderr
    assert mfa_fake.logins == 0
