"""The team store on PostgreSQL + pgvector (psycopg 3, imported on first connection)."""

from captain_memo.store.postgres.store import TeamStore

__all__ = ["TeamStore"]
