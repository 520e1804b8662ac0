"""Endpoint URLs as they may be printed: credentials never shown, nor quoted back by a server."""

from __future__ import annotations

import base64
from urllib.parse import unquote, urlsplit, urlunsplit


def masked_url(url: str) -> str:
    """``url`` as it may be printed: a user name and password, and query values, become ***."""
    try:
        parts = urlsplit(url)
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return "<an unreadable URL>"
    netloc = ("[" + host + "]" if ":" in host else host) + (f":{port}" if port else "")
    if parts.username is not None or parts.password is not None:
        netloc = "***@" + netloc
    query = "&".join(item.split("=", 1)[0] + "=***" for item in parts.query.split("&") if item)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment and "***"))


def url_secrets(url: str) -> tuple[str, ...]:
    """The URL's password, and the Basic credential httpx makes of its user and password (a server
    that quotes the Authorization header back must not print them either)."""
    try:
        parts = urlsplit(url)
        user, password = unquote(parts.username or ""), unquote(parts.password or "")
    except ValueError:
        return ()
    if not user and not password:
        return ()
    basic = base64.b64encode(f"{user}:{password}".encode()).decode()
    return tuple(secret for secret in (password, basic) if secret)
