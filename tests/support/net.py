"""Ports on 127.0.0.1."""

from __future__ import annotations

import socket
import time


def free_port() -> int:
    """A port that was free a moment ago, for a server in another process that must be told
    its port. (In process, bind the socket yourself: ``serve_asgi`` does, with no race.)"""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, timeout: float = 10.0, host: str = "127.0.0.1") -> bool:
    """Whether something accepts connections on ``host:port`` within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            with socket.create_connection((host, port), timeout=0.2):
                return True
        except OSError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.05)
