"""The plugin's options that reach the library, checked as they arrive."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from captain_memo.errors import InputError

# What a save does with text that looks like it holds credentials: ask the user (the answer comes
# back as a second save request saying redact or allow), store it redacted, or store it as it is.
SECRET_POLICIES = ("ask", "redact", "allow")


@dataclass(frozen=True)
class EditorSettings:
    """The plugin's options that reach the library; None means the environment's or the default."""

    db: str | None = None
    provider: str | None = None
    url: str | None = None
    model: str | None = None
    query_prefix: str | None = None  # "" is no prefix; None the model's own (embeddings/prefixes.py)
    document_prefix: str | None = None
    profile: str | None = None
    limit: int | None = None
    share_worktrees: bool = True
    log_file: str | None = None
    secrets: str = "ask"

    @classmethod
    def from_dict(cls, raw: dict | None) -> EditorSettings:
        raw = raw or {}
        limit = raw.get("limit")
        if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
            raise InputError(f"limit must be a positive whole number, not {limit!r}")
        return cls(
            db=_text(raw, "db"),
            provider=_text(raw, "provider"),
            url=_text(raw, "url"),
            model=_text(raw, "model"),
            query_prefix=_prefix(raw, "query_prefix"),
            document_prefix=_prefix(raw, "document_prefix"),
            profile=_text(raw, "profile"),
            limit=limit,
            share_worktrees=bool(raw.get("share_worktrees", True)),
            log_file=_text(raw, "log_file"),
            secrets=_choice(raw, "secrets", SECRET_POLICIES) or "ask",
        )

    @property
    def engine_key(self) -> tuple:
        return (
            str(self.database_path()),
            self.provider,
            self.url,
            self.model,
            self.query_prefix,
            self.document_prefix,
        )

    def database_path(self) -> Path:
        from captain_memo.config import db_path

        return Path(self.db).expanduser() if self.db else db_path()

    def embed_config(self):
        from captain_memo.config import embed_config

        return embed_config(
            provider=self.provider,
            url=self.url,
            model=self.model,
            query_prefix=self.query_prefix,
            document_prefix=self.document_prefix,
        )


def _text(raw: dict, name: str) -> str | None:
    value = raw.get(name)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise InputError(f"setting {name} must be text, not {type(value).__name__}")
    return value


def _prefix(raw: dict, name: str) -> str | None:
    """A prefix setting: unlike other text, an empty one means something (no prefix)."""
    value = raw.get(name)
    if value is None or value is False:
        return None
    if not isinstance(value, str):
        raise InputError(f"setting {name} must be text, not {type(value).__name__}")
    return value


def _choice(raw: dict, name: str, allowed: tuple[str, ...]) -> str | None:
    value = _text(raw, name)
    if value is not None and value not in allowed:
        raise InputError(f"{name} must be one of {', '.join(allowed)}, not {value!r}")
    return value
