"""MCP servers nobody here wrote, for the suite and by hand: installed once into a cache.

    python scripts/mcp_peers.py install     # the protocol's reference server (npm) and mcp-server-time (PyPI)
    python scripts/mcp_peers.py status      # installed? (exit 0) or not (exit 1, says how)
    python scripts/mcp_peers.py commands    # the command line of each, as JSON

- ``@modelcontextprotocol/server-everything`` (pinned, ``EVERYTHING_VERSION``) from the npm registry, run
  with this machine's ``node``: stdio (``… stdio``) and Streamable HTTP (``… streamableHttp``, on ``PORT``);
- ``mcp-server-time`` (pinned, ``TIME_VERSION``) from PyPI, in a venv of its own (it brings its own ``mcp``).

Cache: ``$MCP_PEERS_CACHE`` or ``~/.cache/instance-ai-tui/mcp-peers`` (an install is complete when its
``.installed-<versions>`` marker exists; two installs never run at once: a lock file). The tests use
``commands()`` (``tests/support/mcp_peers.py``) and skip with the install command when the cache is empty,
unless ``MCP_PEERS_REQUIRED=1`` (``.ci/run``), which makes that a failure.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

EVERYTHING = "@modelcontextprotocol/server-everything"
EVERYTHING_VERSION = "2026.8.31"
TIME = "mcp-server-time"
TIME_VERSION = "2026.10.19"
INSTALL_HINT = "python scripts/mcp_peers.py install"


def cache_dir() -> Path:
    env = os.environ.get("MCP_PEERS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "instance-ai-tui" / "mcp-peers"


def _marker() -> Path:
    return cache_dir() / f".installed-everything-{EVERYTHING_VERSION}-time-{TIME_VERSION}"


def installed() -> bool:
    return _marker().exists()


def everything_script() -> Path:
    return cache_dir() / "npm" / "node_modules" / "@modelcontextprotocol" / "server-everything" / "dist" / "index.js"


def time_python() -> Path:
    return cache_dir() / "time-venv" / "bin" / "python"


def commands() -> dict[str, list[str]]:
    """``everything`` (add ``stdio`` or ``streamableHttp``) and ``time``: argv of each."""
    node = shutil.which("node") or "node"
    return {"everything": [node, str(everything_script())],
            "time": [str(time_python()), "-m", "mcp_server_time", "--local-timezone", "UTC"]}


@contextlib.contextmanager
def _lock() -> Iterator[None]:
    cache_dir().mkdir(parents=True, exist_ok=True)
    with open(cache_dir() / ".lock", "w", encoding="utf-8") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def _run(argv: list[str], what: str, **kwargs: object) -> None:
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)  # type: ignore[call-overload]
    if done.returncode != 0:
        tail = (done.stderr or done.stdout or "").strip().splitlines()[-15:]
        raise SystemExit(f"mcp_peers: {what} failed (exit {done.returncode}):\n" + "\n".join(tail))


def install() -> None:
    with _lock():
        if installed():
            print(f"mcp_peers: installed in {cache_dir()}")
            return
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit("mcp_peers: npm is not installed (Node 18 or newer is needed for the reference server)")
        folder = cache_dir() / "npm"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "package.json").write_text(json.dumps({"private": True, "dependencies": {
            EVERYTHING: EVERYTHING_VERSION}}, indent=2) + "\n", encoding="utf-8")
        print(f"mcp_peers: npm install {EVERYTHING}@{EVERYTHING_VERSION} …", flush=True)
        _run([npm, "install", "--no-audit", "--no-fund", "--save-exact"], f"npm install {EVERYTHING}", cwd=folder)
        if not everything_script().exists():
            raise SystemExit(f"mcp_peers: {EVERYTHING} installed without {everything_script()}")
        venv = cache_dir() / "time-venv"
        if not time_python().exists():
            _run([sys.executable, "-m", "venv", str(venv)], "python -m venv")
        print(f"mcp_peers: pip install {TIME}=={TIME_VERSION} …", flush=True)
        _run([str(time_python()), "-m", "pip", "install", "-q", f"{TIME}=={TIME_VERSION}"], f"pip install {TIME}")
        _marker().write_text("ok\n", encoding="utf-8")
        print(f"mcp_peers: installed in {cache_dir()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("action", choices=("install", "status", "commands"))
    args = parser.parse_args(argv)
    if args.action == "install":
        install()
        return 0
    if args.action == "commands":
        print(json.dumps(commands(), indent=2))
        return 0
    if installed():
        print(f"mcp_peers: installed in {cache_dir()}")
        return 0
    print(f"mcp_peers: not installed; run: {INSTALL_HINT}")
    return 1


if __name__ == "__main__":
    sys.exit(main())
