"""Base model for everything that crosses the wire.

Attributes are snake_case in Python and camelCase on the wire. Unknown fields are
kept (``extra="allow"``) so that a newer server's additions survive a round trip.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict
from pydantic.alias_generators import to_camel


class WireModel(BaseModel):
    """A pydantic model with camelCase aliases that tolerates unknown fields."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="allow",
        serialize_by_alias=True,
        defer_build=True,
    )

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready dict as it goes on the wire (camelCase, no ``None`` values)."""
        return self.model_dump(mode="json", by_alias=True, exclude_none=True)

    def to_json(self) -> str:
        return self.model_dump_json(by_alias=True, exclude_none=True)


class StrictWireModel(WireModel):
    """A wire model for request bodies we receive: unknown fields are refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
        defer_build=True,
    )
