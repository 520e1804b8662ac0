"""Endpoint URLs and connection strings as they may be printed: credentials never shown, nor
quoted back by a server. One masker for both of libpq's forms (``postgresql://...`` and
``host=... user=... password=...``) and every HTTP endpoint."""

from __future__ import annotations

import base64
import re
from urllib.parse import unquote, urlsplit, urlunsplit

# libpq's key=value form: a value is a word or a single-quoted string with \' and \\ escapes.
KEYWORD_PAIR = re.compile(r"\s*([A-Za-z_]+)\s*=\s*('(?:[^'\\]|\\.)*'|[^\s']*)")
# What a key=value string may show: where the server is and which database; the rest is masked.
SHOWN_KEYWORDS = frozenset({"host", "hostaddr", "port", "dbname"})


def keyword_pairs(text: str) -> list[tuple[str, str]] | None:
    """The (key, value) pairs of a libpq key=value connection string (quotes and escapes undone);
    None when ``text`` is not one."""
    if "://" in text or "=" not in text:
        return None
    pairs, at = [], 0
    while at < len(text.rstrip()):
        found = KEYWORD_PAIR.match(text, at)
        if found is None or found.end() == at:
            return None
        value = found.group(2)
        if value.startswith("'"):
            value = re.sub(r"\\(.)", r"\1", value[1:-1])
        pairs.append((found.group(1).lower(), value))
        at = found.end()
    return pairs


def masked_url(url: str) -> str:
    """``url`` as it may be printed: a user name and password, and query values, become ***; a
    key=value connection string keeps its host, port and database only."""
    pairs = keyword_pairs(url)
    if pairs is not None:
        return " ".join(f"{key}={value if key in SHOWN_KEYWORDS else '***'}" for key, value in pairs)
    if "://" not in url and "=" in url:
        return "<an unreadable connection string>"
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
