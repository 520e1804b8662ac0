"""JSON for the service's messages without importing the json package.

The command line's warm path is an exchange of two JSON lines over a socket, and importing
``json`` imports ``re`` and ``enum`` (json's pure-Python parts compile patterns at import): about
a third of a warm recall's own CPU. CPython's ``_json`` (the C module ``json`` itself calls) holds
the whole encoder and scanner; this module configures them as ``json.dumps(ensure_ascii=...)`` and
``json.loads`` do, and uses the json package itself where ``_json`` is not there or differs.
"""

from __future__ import annotations

_CONSTANTS = {"NaN": float("nan"), "Infinity": float("inf"), "-Infinity": float("-inf")}
_WHITESPACE = " \t\n\r"


class _Reading:
    """What the scanner reads from its context: json.JSONDecoder's defaults."""

    strict = True
    object_hook = None
    object_pairs_hook = None
    parse_float = float
    parse_int = int
    parse_constant = _CONSTANTS.__getitem__


def _not_serializable(value):
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def _fast():
    """``(dumps, loads)`` over ``_json``, or None where it is missing or takes other arguments."""
    try:
        from _json import encode_basestring, encode_basestring_ascii, make_encoder, make_scanner

        def encoder(escape):
            # markers, default, string encoder, indent, key and item separators, sort_keys,
            # skipkeys, allow_nan: json.JSONEncoder's defaults, as json.dumps passes them.
            return make_encoder({}, _not_serializable, escape, None, ": ", ", ", False, False, True)

        encoders = {False: encoder(encode_basestring), True: encoder(encode_basestring_ascii)}
        scan = make_scanner(_Reading())
    except (ImportError, TypeError):
        return None

    def dumps(value, ascii: bool = False) -> str:
        return "".join(encoders[ascii](value, 0))

    def loads(data: bytes | str):
        text = (data.decode("utf-8") if isinstance(data, bytes) else data).strip(_WHITESPACE)
        try:
            value, end = scan(text, 0)
        except StopIteration as stop:
            raise ValueError(f"Expecting value: char {stop.value}") from None
        if end != len(text):
            raise ValueError(f"Extra data: char {end}")
        return value

    return dumps, loads


def _json_package():
    import json

    def dumps(value, ascii: bool = False) -> str:
        return json.dumps(value, ensure_ascii=ascii)

    return dumps, json.loads


dumps, loads = _fast() or _json_package()
