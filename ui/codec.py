"""Analysis results as JSON, for the ``Analysis`` nodes the UI keeps (:mod:`llamp.ui.stored`).

A stored result is read back by this module only, never unpickled: it holds JSON values and
tagged objects of a closed set of shapes —

- a float that JSON cannot hold: ``{"$f": "inf" | "-inf" | "nan"}``;
- a tuple ``{"$t": [...]}``; a dict ``{"$m": [[key, value], ...]}`` (keys of any kind here);
- a numeric numpy array ``{"$nd": [dtype, shape, base64(zlib(bytes))]}`` (bool, int, uint, float
  only): a 64 × 64 λ matrix is a few kB, not a list of 4,096 numbers;
- a DataFrame ``{"$df": {"columns": [...], "data": [...], "index": ...}}``: numeric columns as
  arrays, the others as lists of plain values; the index only when it is not ``0 … n−1``;
- a dataclass of the classes :func:`register`-ed here ``{"$dc": [name, {field: value}]}``.

Fields that hold live objects (a region's :class:`~llamp.lp.region.Plane`, a what-if's expanded
graphs) are registered as dropped, with the value they get when read back. Anything else cannot
be written (``TypeError``) or read (``ValueError``): the page then computes again.
"""

from __future__ import annotations

import base64
import dataclasses
import math
import zlib
from typing import Any

import numpy as np
import pandas as pd

#: name → (class, {dropped field: value when read back}).
_CLASSES: dict[str, tuple[type, dict[str, Any]]] = {}
_NAMES: dict[type, str] = {}
_NUMERIC = "biuf"


def register(cls: type, **dropped: Any) -> type:
    """Allow dataclass ``cls`` in stored results; ``dropped`` fields are not written and get the
    given value when read back."""
    if not dataclasses.is_dataclass(cls):
        raise TypeError(f"{cls.__name__} is not a dataclass")
    name = f"{cls.__module__}.{cls.__qualname__}"
    _CLASSES[name] = (cls, dict(dropped))
    _NAMES[cls] = name
    return cls


def encode(value: Any) -> Any:
    """``value`` as JSON-serialisable data (see the module docstring); ``TypeError`` for a
    shape this module does not store."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, np.generic):
        return encode(value.item())
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else {"$f": repr(value)}
    if isinstance(value, tuple):
        return {"$t": [encode(v) for v in value]}
    if isinstance(value, list):
        return [encode(v) for v in value]
    if isinstance(value, dict):
        return {"$m": [[encode(k), encode(v)] for k, v in value.items()]}
    if isinstance(value, np.ndarray):
        return {"$nd": _array(value)}
    if isinstance(value, pd.DataFrame):
        return {"$df": _frame(value)}
    name = _NAMES.get(type(value))
    if name is not None:
        dropped = _CLASSES[name][1]
        fields = {
            f.name: encode(getattr(value, f.name))
            for f in dataclasses.fields(value)
            if f.name not in dropped
        }
        return {"$dc": [name, fields]}
    raise TypeError(f"cannot store a {type(value).__name__} in an analysis")


def decode(data: Any) -> Any:
    """The value :func:`encode` wrote; ``ValueError`` for anything it could not have written."""
    if data is None or isinstance(data, bool | str | int | float):
        return data
    if isinstance(data, list):
        return [decode(v) for v in data]
    if not isinstance(data, dict) or len(data) != 1:
        raise ValueError(f"not a stored value: {str(data)[:80]}")
    ((tag, body),) = data.items()
    if tag == "$f":
        if body not in ("inf", "-inf", "nan"):
            raise ValueError(f"not a stored float: {body!r}")
        return float(body)
    if tag == "$t":
        return tuple(decode(v) for v in body)
    if tag == "$m":
        return {_hashable(decode(k)): decode(v) for k, v in body}
    if tag == "$nd":
        return _unarray(body)
    if tag == "$df":
        return _unframe(body)
    if tag == "$dc":
        name, fields = body
        if name not in _CLASSES:
            raise ValueError(f"not a stored class: {name!r}")
        cls, dropped = _CLASSES[name]
        values = {k: decode(v) for k, v in fields.items()} | dropped
        known = {f.name: f for f in dataclasses.fields(cls)}
        if set(values) != set(known):
            raise ValueError(f"stored {name} has fields {sorted(values)}, expected {sorted(known)}")
        obj = cls(**{k: v for k, v in values.items() if known[k].init})
        for k, v in values.items():
            if not known[k].init:
                object.__setattr__(obj, k, v)
        return obj
    raise ValueError(f"unknown stored tag {tag!r}")


def _hashable(key: Any) -> Any:
    return tuple(_hashable(k) for k in key) if isinstance(key, list) else key


def _array(a: np.ndarray) -> list[Any]:
    if a.dtype.kind not in _NUMERIC:
        raise TypeError(f"cannot store a numpy array of {a.dtype}")
    data = zlib.compress(np.ascontiguousarray(a).tobytes(), 6)
    return [a.dtype.str, list(a.shape), base64.b64encode(data).decode("ascii")]


def _unarray(body: list[Any]) -> np.ndarray:
    dtype, shape, data = body
    dt = np.dtype(dtype)
    if dt.kind not in _NUMERIC:
        raise ValueError(f"not a stored array type: {dtype!r}")
    raw = zlib.decompress(base64.b64decode(data))
    return np.frombuffer(raw, dtype=dt).reshape([int(n) for n in shape]).copy()


def _column(s: pd.Series | pd.Index) -> Any:
    values = s.to_numpy()
    if values.dtype.kind in _NUMERIC:
        return {"$nd": _array(values)}
    return [encode(v) for v in values.tolist()]


def _frame(df: pd.DataFrame) -> dict[str, Any]:
    if isinstance(df.columns, pd.MultiIndex) or isinstance(df.index, pd.MultiIndex):
        raise TypeError("cannot store a DataFrame with a MultiIndex")
    body: dict[str, Any] = {
        "columns": [encode(c) for c in df.columns],
        "data": [_column(df.iloc[:, i]) for i in range(df.shape[1])],
        "rows": len(df),
    }
    default = isinstance(df.index, pd.RangeIndex) and df.index.start == 0 and df.index.step == 1
    if not default or df.index.name is not None:
        body["index"] = [encode(df.index.name), _column(df.index)]
    return body


def _unframe(body: dict[str, Any]) -> pd.DataFrame:
    columns = [_hashable(decode(c)) for c in body["columns"]]
    data = [decode(c) for c in body["data"]]
    if len(columns) != len(data):
        raise ValueError("stored DataFrame: columns and data differ in number")
    frame = pd.DataFrame(dict(enumerate(data)), index=range(int(body["rows"])))
    frame.columns = pd.Index(columns)
    if "index" in body:
        name, values = body["index"]
        frame.index = pd.Index(decode(values), name=decode(name))
    return frame


__all__ = ["decode", "encode", "register"]
