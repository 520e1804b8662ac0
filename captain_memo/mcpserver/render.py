"""Tool results as text for a model to read: short lines, ids first, nothing left implicit.

Every result also carries the same data as JSON (``structuredContent``); this text is what most
clients put in front of the model, so a failed search leg or a redaction is stated in it too.
"""

from __future__ import annotations


def _where(data: dict) -> str:
    if data.get("all_projects"):
        return "every project"
    project = data.get("project")
    place = f"project {project}" if project else "personal notes (no repository)"
    return place + (f", branch {data['branch']}" if data.get("branch") else "")


def recall_text(data: dict) -> str:
    hits = data["hits"]
    lines = [
        f"{len(hits)} {'memory' if len(hits) == 1 else 'memories'} for {data['query']!r} in {_where(data)} "
        f"(legs: {' + '.join(data['legs'])}; profile {data['profile']})"
    ]
    if data.get("notice"):  # a question about time: its window, or the date it was read against
        lines.append(data["notice"])
    for failed, why in data["failed_legs"].items():
        lines.append(f"WARNING: the {failed} leg failed, so these results are {' + '.join(data['legs'])}-only: {why}")
    for hit in hits:
        meta = [
            f"score {hit['score']:.3f}",
            hit["age"],
            hit["branch"] and f"branch {hit['branch']}",
            hit["source"]["label"],
            hit["superseded_by"] and f"SUPERSEDED by #{hit['superseded_by']}",
        ]
        lines.append("")
        lines.append(f"#{hit['id']} [{hit['kind']}] {hit['title']}")
        lines.append("  " + " · ".join(part for part in meta if part))
        lines.extend("  > " + line for line in hit["excerpt"].splitlines() if line.strip())
        lines.extend("  " + line for line in hit.get("explain", ()))
    if not hits:
        lines.append("No memory matched.")
    return "\n".join(lines)


def memory_text(data: dict) -> str:
    src = data["source"]
    meta = [
        data["kind"],
        f"#{data['id']}",
        data["age"],
        data["branch"] and f"branch {data['branch']}",
        src["label"],
        data["superseded_by"] and f"SUPERSEDED by #{data['superseded_by']}",
    ]
    return f"# {data['title']}\n{' · '.join(part for part in meta if part)}\n\n{data['body']}"


def remember_text(data: dict) -> str:
    where = f"in project {data['project']}" if data["project"] else "as a personal note (no repository)"
    if data.get("team"):
        where = f"in the team store, project {data['project']}" if data["project"] else "in the team store"
    branch = f" on branch {data['branch']}" if data["branch"] else ""
    lines = [f"Saved #{data['id']} [{data['kind']}] {data['title']} {where}{branch} ({data['source']['label']})."]
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
