"""A hit and a memory as lines to read, from their JSON (views.py): the terminal's list, the text a
model reads from the MCP server, a memory opened in full. Light to import (the command line's
thin client renders a warm service's answer with it)."""

from __future__ import annotations

from captain_memo.presentation.words import age, counted, explain_lines, ref, store_mark, superseded_mark

EXCERPT_CHARS = 600
COMPACT_TITLE_CHARS = 90
COMPACT_SNIPPET_CHARS = 130
COMPACT_TEXT_CHARS = 2_500  # a compact answer's text for 10 hits: what a model reads before asking for more


def clip(text: str, limit: int) -> str:
    """``text`` of at most ``limit`` characters, cut at a word with an ellipsis."""
    text = text.strip()
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit)
    return text[: cut if cut > limit // 2 else limit].rstrip() + " …"


def excerpt(text: str, title: str = "", limit: int = EXCERPT_CHARS) -> str:
    """A chunk's text without the heading path it starts with (the hit shows it already)."""
    text = text.strip()
    if title and text.startswith(title + "\n"):
        text = text[len(title) + 1 :].lstrip()
    return clip(text, limit)


def hit_where(hit: dict) -> str:
    """Where the hit's chunk is: ``doc/team.md:130-141`` (its own lines), a commit, an origin."""
    chunk = hit.get("chunk") or {}
    return chunk.get("label") or hit["source"].get("label") or hit["source"].get("origin") or ""


def part_ref(hit: dict) -> str | None:
    """``12:310`` when the hit is a part inside its memory (``show`` opens it there), else None."""
    found = (hit.get("chunk") or {}).get("ref")
    return found if isinstance(found, str) and ":" in found else None


def hit_title(hit: dict) -> str:
    """The chunk's own heading path (``API Reference > Fixtures > tmp_path_factory``), else the title."""
    chunk = hit.get("chunk") or {}
    return chunk.get("title") or hit["title"]


def hit_id(hit: dict) -> str:
    """The id to open the hit with: ``#12:310`` (memory 12 at its chunk's line) or ``#12``."""
    chunk = hit.get("chunk") or {}
    return ref(chunk.get("ref") or hit["id"])


def marks(data: dict) -> list[str]:
    """The team and superseded marks of a hit or a memory, those that apply."""
    return [mark for mark in (store_mark(data), superseded_mark(data)) if mark]


# -- the terminal ----------------------------------------------------------------------------


def terminal_hit(hit: dict, now: float, explain: bool = False, flat=str) -> list[str]:
    """A recall hit as the terminal lists it: rank, score, id, kind, heading path, then where it is
    (age, branch, its own lines, team author, superseded) and the lines holding the query's words.
    ``flat`` puts a stored field on one line safely (terminal.one_line)."""
    meta = [age(now - hit["created_at"]), hit["branch"] and f"@{hit['branch']}", hit_where(hit), *marks(hit)]
    lines = [
        f"{hit['rank']:>2}. {hit['score']:.3f}  {hit_id(hit)} [{hit['kind']}] {flat(hit_title(hit))}"
        f"  ({flat(' '.join(part for part in meta if part))})"
    ]
    snippet = (hit.get("chunk") or {}).get("snippet") or ""
    lines.extend(f"      {flat(line)}" for line in snippet.split("\n") if line.strip())
    if explain:
        lines.extend("      " + line for line in explain_lines(hit))
    return lines


# -- a recall's footer: one line under the terminal's list and under the editor's window ------


def failed_part(name: str) -> str:
    """What a failure's name says failed: ``keyword leg``, ``team store``, ``team vector leg``."""
    if name.endswith("grant"):  # the team store answered, but this role may read nothing in it
        return "team store's grant"
    return f"{name} store" if name in ("local", "team") else f"{name} leg"


def footer(result: dict) -> str:
    """``profile v3 · legs: vector + keyword · stores: local + team · failed: team store · 12 ms``:
    the profile, the legs that answered, the stores when a team store is set, what failed and the
    time taken, worded alike wherever a recall is listed."""
    stores = result.get("stores", ["local"])
    parts = [f"profile {result['profile']}", f"legs: {' + '.join(result['legs']) or 'none'}"]
    if "team" in stores or "team" in result["failures"]:
        parts.append(f"stores: {' + '.join(stores) or 'none'}")
    if result["failures"]:
        parts.append("failed: " + ", ".join(failed_part(name) for name in sorted(result["failures"])))
    parts.append(f"{result['elapsed_ms']:.0f} ms")
    if result.get("unnamed"):  # the hits are only the closest by meaning (ranking/query.py unheld_names)
        # A name is the user's query text: escaped, so no control character reaches a terminal.
        names = ", ".join(name.encode("unicode_escape").decode("ascii") for name in result["unnamed"])
        parts.append(f"no memory names {names}: closest by meaning")
    return " · ".join(parts)


def failure_line(name: str, why: str, flat=str) -> str:
    """``vector leg failed: ...``, ``team store failed: ...``, ``team vector leg failed: ...``."""
    if name.endswith("grant"):
        return f"team store: {flat(why)}"
    return f"{failed_part(name)} failed: {flat(why)}"


def warning(result: dict, flat=str) -> str:
    """What answered and why the rest did not, "" when every leg and store answered. ``flat`` puts
    an error message on one line safely (terminal.one_line)."""
    failures = result["failures"]
    if not failures:
        return ""
    failed = "; ".join(failure_line(name, why, flat) for name, why in failures.items())
    if not result["legs"]:
        answered = "no leg answered"
    elif len(result["legs"]) < 2:
        answered = f"only the {' + '.join(result['legs'])} leg answered"
    elif "team" in failures:
        answered = "the local store alone answered"
    else:
        answered = "part of the search failed; the hits are what answered"
    return f"{answered} ({failed})"


# -- the MCP server's text ---------------------------------------------------------------------


def _where(data: dict) -> str:
    if data.get("all_projects"):
        return "every project"
    project = data.get("project")
    where = f"project {project}" if project else "personal notes (no repository)"
    return where + (f", branch {data['branch']}" if data.get("branch") else "")


def compact_hit(hit: dict, now: float) -> dict:
    """A hit as few characters as still say what and where it is: id, kind, heading path, age, store
    (author), file lines and the matching lines; a null or default field is left out."""
    chunk = hit.get("chunk") or {}
    data = {
        "id": hit["id"],
        "part": part_ref(hit),
        "kind": hit["kind"],
        "title": clip(hit_title(hit), COMPACT_TITLE_CHARS),
        "age": age(now - hit["created_at"]),
        "store": hit["store"],
        "author": hit.get("author"),
        "where": hit_where(hit),
        "lines": clip(" ".join((chunk.get("snippet") or "").split()), COMPACT_SNIPPET_CHARS),
        "superseded_by": hit.get("superseded_by"),
    }
    return {key: value for key, value in data.items() if value not in (None, "")}


def fit_compact(answer: dict, budget: int = COMPACT_TEXT_CHARS) -> dict:
    """A compact answer whose text fits ``budget``: the matching lines are cut shorter, every hit's
    alike, until it does (a long header or notice leaves them less room); ids and titles stay whole."""
    limit = COMPACT_SNIPPET_CHARS
    while len(recall_text(answer)) > budget and limit > 40:
        limit -= 15
        for hit in answer["hits"]:
            if "lines" in hit:
                hit["lines"] = clip(hit["lines"], limit)
    return answer


def full_hit(hit: dict, now: float) -> dict:
    """A hit with what a model may want before opening it: score, branch, project, where it is (the
    file found in this tree, the chunk's own lines) and the chunk's text without its heading."""
    keys = ("id", "kind", "score", "branch", "project", "store", "author", "superseded_by", "source")
    data = {key: hit.get(key) for key in keys}
    chunk = hit.get("chunk") or {}
    data.update(
        part=part_ref(hit),
        title=hit_title(hit),
        age=age(now - hit["created_at"]),
        where=hit_where(hit),
        lines=[chunk.get("line_start"), chunk.get("line_end")],
        excerpt=excerpt(hit["text"], hit_title(hit)),
    )
    return data


def recall_text(data: dict) -> str:
    """A recall as the model reads it: one block per hit, ids first, the failures said."""
    hits = data["hits"]
    full = data.get("detail") == "full"
    more = "" if full else '; detail "full" gives more, show ID the whole memory'
    lines = [
        f"{counted(len(hits), 'memory')} for {data['query']!r} in {_where(data)} "
        f"(stores searched: {_stores(data)}; legs: {' + '.join(data['legs'])}{more})"
    ]
    if data.get("notice"):  # a question about time: its window, or the date it was read against
        lines.append(data["notice"])
    if data.get("redacted"):
        lines.append(redaction_line(data["redacted"]))
    lines.extend(_warning(failed, why) for failed, why in data["failed_legs"].items())
    for hit in hits:
        lines.extend(_model_hit(hit, full))
    if not hits:
        # Named: an agent started with another HOME or CAPTAIN_MEMO_DB reads another store.
        lines.append(f"No memory matched in {data['database']}." if data.get("database") else "No memory matched.")
    return "\n".join(lines)


def _stores(data: dict) -> str:
    """The stores that answered, and the one that did not: "local + team", "local (team store down)"."""
    stores = " + ".join(data.get("stores", ["local"])) or "none"
    down = [name for name in ("local", "team") if name in data["failed_legs"]]
    return stores + "".join(f" ({name} store down)" for name in down)


def _warning(failed: str, why: str) -> str:
    """A failed store says which store the hits come from; a failed leg, which legs ranked them."""
    if failed.endswith("grant"):  # the team store answered, but this role may read nothing in it
        return f"WARNING: the team store gives this role nothing to read, so these results are local only: {why}"
    if failed in ("local", "team"):
        rest = "team" if failed == "local" else "local"
        return f"WARNING: the {failed} store did not answer, so these results are {rest} only: {why}"
    store, _, leg = failed.rpartition(" ")
    legs = " + ".join(name for name in ("vector", "keyword") if name != leg)
    if store:
        return f"WARNING: the {store} store's {leg} leg failed, so its results are {legs}-only: {why}"
    return f"WARNING: the {leg} leg failed, so these results are {legs}-only: {why}"


def _model_hit(hit: dict, full: bool) -> list[str]:
    store = store_mark(hit)
    meta = [
        full and f"score {hit['score']:.3f}",
        hit["age"],
        store,
        full and hit.get("branch") and f"branch {hit['branch']}",
        hit["where"] if "where" in hit else hit_where(hit),
        _loud(superseded_mark(hit)),
    ]
    lines = ([""] if full else []) + [f"{ref(hit.get('part') or hit['id'])} [{hit['kind']}] {hit['title']}"]
    lines.append("  " + " · ".join(part for part in meta if part))
    body = hit["excerpt"] if full else hit.get("lines", "")
    lines.extend("  > " + line for line in body.splitlines() if line.strip())
    lines.extend("  " + line for line in hit.get("explain", ()))
    return lines


def _loud(mark: str) -> str:
    """``SUPERSEDED by #t8``: a model must not miss that a memory is out of date."""
    return mark.replace("superseded", "SUPERSEDED", 1)


def memory_meta(data: dict) -> list[str]:
    """The line under a memory's title: kind, id, age, author, branch, source, superseded."""
    return [
        part
        for part in (
            data["kind"],
            ref(data["id"]),
            data.get("age"),
            store_mark(data),
            data.get("branch") and f"branch {data['branch']}",
            data["source"].get("label"),
            superseded_mark(data),
        )
        if part
    ]


def redaction_line(redacted: list[str]) -> str:
    """What was taken out of an answer on its way to a model (secrets.redacted_json)."""
    return f"Redacted on the way out, as it looked like a credential (the store keeps it): {'; '.join(redacted)}."


def memory_text(data: dict) -> str:
    """A memory in full, as a model reads it (MCP ``show`` and resources); opened at a line
    (``show 12:310``), the part holding it and its place, then the whole memory when it was asked
    for (``body``)."""
    said = f"{redaction_line(data['redacted'])}\n" if data.get("redacted") else ""
    head = f"# {data['title']}\n{' · '.join(memory_meta(data))}\n{said}\n"
    part = data.get("chunk")
    if not part:
        return head + data["body"]
    # Rules, not headings: the part and the body are often Markdown with headings of their own.
    where = f"{data['source'].get('path') or ''}:{part['line_start']}-{part['line_end']}"
    shown = f"{head}── {where} · {part['title']} ──\n{part['text']}\n\n"
    if "body" not in data:
        return shown + f"── show {data['id']} (or this id with whole: true) for the whole memory ──"
    return shown + f"── the whole memory: {data['source'].get('label')} ──\n{data['body']}"
