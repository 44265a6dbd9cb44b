"""Identifiers of the assistant layer, in n8n's style (``run_<random>``, ``mg_<random>``, ...)."""

from __future__ import annotations

import secrets
import string

_ALPHABET = string.ascii_letters + string.digits


def _random(length: int = 16) -> str:
    return "".join(secrets.choice(_ALPHABET) for _ in range(length))


def new_run_id() -> str:
    return f"run_{_random()}"


def new_message_group_id() -> str:
    return f"mg_{_random()}"


def new_message_id() -> str:
    return f"msg_{_random()}"


def new_request_id() -> str:
    return f"cr_{_random()}"


def new_thread_id() -> str:
    return f"thread_{_random()}"


def new_task_id() -> str:
    return f"task_{_random(10)}"


def orchestrator_id(run_id: str) -> str:
    """The orchestrator's agentId for a run: ``orchestrator-<runId>`` (as released n8n does)."""
    return f"orchestrator-{run_id}"


def sub_agent_id(role: str) -> str:
    """A sub-agent's agentId: ``agent-<role slug>-<random>``."""
    slug = "".join(c if c.isalnum() else "-" for c in role.lower()).strip("-")[:24] or "agent"
    while "--" in slug:
        slug = slug.replace("--", "-")
    return f"agent-{slug}-{_random(6)}"
