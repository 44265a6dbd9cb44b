"""What tests (and benchmarks) share: free ports, a served ASGI app, the isolated config.

    from tests.support import free_port, serve_asgi, isolate_config
"""

from __future__ import annotations

from .asgi import AsgiServer, serve_asgi
from .config import isolate_config
from .loop import LoopTurns, loop_turns
from .net import free_port, wait_for_port

__all__ = ["AsgiServer", "LoopTurns", "free_port", "isolate_config", "loop_turns", "serve_asgi", "wait_for_port"]
