"""Any value llamp prints or returns as JSON, as JSON can hold it: :func:`json_value`.

One converter for every JSON a person or a program reads — ``llamp … --json``, the rows of a
read-only Cypher query (``llamp store query``), a study's cells — so a number is never changed
on the way: an exact decimal (a LadybugDB ``sum``) stays exact (an integer when whole, a float
when the float is that decimal, else its text), an infinity is the string ``"inf"`` and NaN is
``null`` (JSON has neither).
"""

from __future__ import annotations

import datetime
import decimal
import math
from typing import Any


def json_value(value: Any) -> Any:
    """``value`` as JSON can hold it, numbers unchanged: what analyses return and whatever a
    query returns — dates and times in ISO 8601, durations in seconds, bytes as hex, numpy
    arrays as lists, Neo4j nodes, relationships and paths as maps, anything else as its
    text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            return None if math.isnan(value) else ("inf" if value > 0 else "-inf")
        return value
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [json_value(v) for v in value]
    if isinstance(value, set | frozenset):
        return sorted((json_value(v) for v in value), key=repr)
    if isinstance(value, decimal.Decimal):
        if not value.is_finite():
            return json_value(float(value))
        if value == value.to_integral_value():
            return int(value)
        return float(value) if decimal.Decimal(float(value)) == value else str(value)
    if isinstance(value, datetime.timedelta):
        return value.total_seconds()
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).hex()
    if hasattr(value, "tolist") and callable(value.tolist):  # numpy arrays and scalars
        return json_value(value.tolist())
    if hasattr(value, "isoformat"):  # dates, times (also pandas' and the drivers')
        return value.isoformat()
    if hasattr(value, "iso_format"):  # neo4j.time types
        return value.iso_format()
    if hasattr(value, "nodes") and hasattr(value, "relationships"):  # a Neo4j Path
        return {
            "nodes": [json_value(n) for n in value.nodes],
            "relationships": [json_value(r) for r in value.relationships],
        }
    if hasattr(value, "labels") and hasattr(value, "items"):  # a Neo4j Node
        return {"labels": sorted(value.labels), "properties": json_value(dict(value.items()))}
    if hasattr(value, "type") and hasattr(value, "items") and hasattr(value, "start_node"):
        return {"type": value.type, "properties": json_value(dict(value.items()))}
    if hasattr(value, "item") and callable(value.item):
        return json_value(value.item())
    return str(value)


__all__ = ["json_value"]
