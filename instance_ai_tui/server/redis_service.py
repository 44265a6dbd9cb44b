"""The assistant service for ``instance-ai serve --redis redis://…``: several server processes
behind one URL share threads, events, runs and checkpoints in Redis.

``InstanceAI`` on ``RedisStore`` + ``RedisBus`` + ``RedisCoordinator`` (instead of SQLite and the
in-process bus). The URL comes from ``--redis``, else ``INSTANCE_AI_REDIS_URL``, else the config
file's ``redis_url``. Imported only when a service really starts (it pulls in redis-py).
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING
from urllib.parse import urlsplit, urlunsplit

if TYPE_CHECKING:
    from ..assistant.service import InstanceAI
    from ..config import Settings

REDIS_ENV = "INSTANCE_AI_REDIS_URL"
DEFAULT_LEASE_MS = 15_000


def resolve_redis_url(flag: str | None, settings: Settings, env: dict[str, str] | None = None) -> str | None:
    env = dict(os.environ) if env is None else env
    return flag or env.get(REDIS_ENV) or settings.redis_url or None


def redacted(url: str) -> str:
    """``url`` without its password (for logs and the start banner)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    host = parts.hostname or ""
    netloc = f"{parts.username or ''}:***@{host}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def check_redis(url: str, timeout: float = 3.0) -> str | None:
    """None when Redis at ``url`` answers ``PING``, else a readable reason (blocking: call it
    before the event loop starts)."""
    import redis

    if urlsplit(url).scheme not in ("redis", "rediss", "unix"):
        return f"invalid Redis URL {redacted(url)!r}: use redis://host:port/db (or rediss://, unix://)"
    try:
        client = redis.Redis.from_url(url, socket_connect_timeout=timeout, socket_timeout=timeout)
    except ValueError as exc:
        return f"invalid Redis URL {redacted(url)!r}: {exc}"
    try:
        client.ping()
        version = str(client.info("server").get("redis_version", "0"))
    except redis.RedisError as exc:
        return f"cannot reach Redis at {redacted(url)}: {exc}"
    finally:
        client.close()
    major, _, rest = version.partition(".")
    minor = rest.partition(".")[0]
    if (int(major or 0), int(minor or 0)) < (6, 2):
        return f"Redis {version} at {redacted(url)} is too old: 6.2 or newer is needed"
    return None


def build_redis_service(
    settings: Settings,
    redis_url: str,
    *,
    instance_id: str | None = None,
    lease_ms: int = DEFAULT_LEASE_MS,
    demo_delay: float | None = None,
    generate_titles: bool | None = None,
    prefix: str = "iai:",
) -> InstanceAI:
    """An ``InstanceAI`` on Redis (not started). Raises ``ValueError`` with a readable message
    for a bad instance id, lease or model."""
    from ..assistant.redis_coordinator import RedisCoordinator
    from ..assistant.service import AssistantOptions, InstanceAI
    from ..bus.redis import RedisBus
    from ..store.redis import RedisStore

    options = AssistantOptions()
    if demo_delay is not None:
        options.demo_delay = demo_delay
    if generate_titles is not None:
        options.generate_titles = generate_titles
    store = RedisStore.from_url(redis_url, prefix=prefix)
    coordinator = RedisCoordinator(store, instance_id, lease_ms=lease_ms)
    bus = RedisBus(store)
    return InstanceAI(store, bus, model=settings.model.name, settings=settings, options=options,
                      coordinator=coordinator)
