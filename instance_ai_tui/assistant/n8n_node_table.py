"""The node types of n8n 2.41.1 and their versions, read from ``data/n8n_nodes.json``.

Used when the instance's own catalogue cannot be read (the public API key does not give access to it):
``type -> (default typeVersion the editor uses, display name, is a trigger, every version)``. The file is
generated from a real instance's ``/types/nodes.json``: ``python scripts/n8n_peer.py node-table`` starts a
fresh n8n 2.41.1 and rewrites it.
"""

from __future__ import annotations

import functools
import json
from importlib import resources

NodeInfo = tuple[float | int, str, bool, tuple[float | int, ...]]


@functools.cache
def node_table() -> dict[str, NodeInfo]:
    """The catalogue (read once, on first use)."""
    raw = resources.files(__package__).joinpath("data", "n8n_nodes.json").read_text(encoding="utf-8")
    data = json.loads(raw)
    return {name: (entry[0], entry[1], bool(entry[2]), tuple(entry[3])) for name, entry in data["nodes"].items()}
