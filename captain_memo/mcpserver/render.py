"""Tool results as text for a model to read: short lines, ids first, nothing left implicit.

Every result also carries the same data as JSON (``structuredContent``); this text is what most
clients put in front of the model, so a failed search leg or a redaction is stated in it too.
"""

from __future__ import annotations

from captain_memo.presentation.text import memory_text, recall_text

__all__ = ["forget_text", "memory_text", "recall_text", "remember_text", "structured", "supersede_text"]


def structured(data: dict, notices: list[str] | None = None) -> dict:
    """A tool's ``structuredContent``: everything its text says (a compact hit's matching lines
    too), since some clients hand the model this alone (Claude Code); the notices the text carries
    as extra blocks are ``notices``. The text is rendered from it (server.py)."""
    return {**data, "notices": list(notices)} if notices else data


def remember_text(data: dict) -> str:
    where = f"in project {data['project']}" if data["project"] else "as a personal note (no repository)"
    if data.get("team"):
        where = f"in the team store, project {data['project']}" if data["project"] else "in the team store"
    branch = f" on branch {data['branch']}" if data["branch"] else ""
    saved = "Already saved, nothing new stored:" if data.get("already_saved") else "Saved"
    lines = [f"{saved} #{data['id']} [{data['kind']}] {data['title']} {where}{branch} ({data['source']['label']})."]
    if data["redacted"]:
        lines.append("Redacted before saving, as it looked like a credential: " + "; ".join(data["redacted"]) + ".")
    if data["private_left_out"]:
        lines.append("Text inside <private>...</private> was left out.")
    if not data["vector"]:
        lines.append("No vector yet (the embedding service did not answer): keyword search finds it meanwhile.")
    return "\n".join(lines)


def supersede_text(data: dict) -> str:
    if data["superseded_by"] is None:
        return f"#{data['old']} is current again."
    return f"#{data['old']} is superseded by #{data['superseded_by']}."


def forget_text(data: dict) -> str:
    return f"Forgot #{data['forgotten']}."
