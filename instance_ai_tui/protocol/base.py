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
        """The compact JSON text as it goes on the wire (what ``to_wire`` gives, serialised)."""
        # the serializer itself: what model_dump_json calls, without its wrapper's cost (the
        # assistant serialises every streamed token through here)
        return self.__pydantic_serializer__.to_json(self, by_alias=True, exclude_none=True).decode()


class StrictWireModel(WireModel):
    """A wire model for request bodies we receive: unknown fields are refused."""

    model_config = ConfigDict(
        alias_generator=to_camel,
        populate_by_name=True,
        extra="forbid",
        serialize_by_alias=True,
        defer_build=True,
    )
