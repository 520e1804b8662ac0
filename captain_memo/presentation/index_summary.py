"""What an index run left out and why, in words for its summary line: one clause for the notes
(files skipped, by cause, with the setting that changes it) and one for the git history.

Read from an index run's report (sources/index_report.py's ``IndexReport``: ``skipped_files``,
``not_notes``, ``skipped``, ``left_out``), which the command line has from ``Memo.index``.
"""

from __future__ import annotations

# Why a file was skipped, by the start of its reason: (what to call it, what would change it).
SKIP_CAUSES = (
    ("binary", "binary", "not text"),
    ("not UTF-8", "not UTF-8", "save it as UTF-8"),
    ("cannot read", "unreadable", "their memories are kept"),
    ("a symbolic link", "links out of the folder", "not followed"),
    ("folder not found", "missing folders", "CAPTAIN_MEMO_NOTE_DIRS / _SKILL_DIRS"),
    ("not a note", "not notes", "notes are Markdown, reStructuredText, AsciiDoc or plain text"),
)


def _cause(reason: str) -> tuple[str, str]:
    if "-byte cap" in reason:
        return "over the size cap", "CAPTAIN_MEMO_MAX_FILE_BYTES"
    if "not a regular file" in reason:
        return "not regular files", "FIFOs and devices are never read"
    for start, name, hint in SKIP_CAUSES:
        if reason.startswith(start):
            return name, hint
    return "other", "see above"


def left_out(report) -> str:
    """One clause saying what a folder run left out and why, or '' when nothing was."""
    causes: dict[tuple[str, str], int] = {}
    for _, reason in report.skipped_files:
        cause = _cause(reason)
        causes[cause] = causes.get(cause, 0) + 1
    parts = [f"{n} {name} ({hint})" for (name, hint), n in causes.items()]
    if report.not_notes:
        kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(report.not_notes, key=lambda kv: (-kv[1], kv[0])))
        count = sum(n for _, n in report.not_notes)
        what = "file that is not a note" if count == 1 else "files that are not notes"
        parts.append(f"{count} {what} ({kinds})")
    return "left out: " + "; ".join(parts) if parts else ""


def history_left_out(report, cap: int) -> str:
    """One clause saying which commits a git run left out and why, or ''."""
    parts = []
    if report.skipped:
        parts.append(f"{report.skipped:,} merge or empty-message commits (nothing of their own to say)")
    if report.left_out:
        parts.append(
            # True of any run that met the cap: a first one, one after an interrupted first run
            # (which reads the same newest commits again), one after a long absence.
            f"{report.left_out:,} older commits, past the newest {cap:,} read "
            f"(--max-commits N or CAPTAIN_MEMO_GIT_MAX_COMMITS)"
        )
    return "left out: " + "; ".join(parts) if parts else ""
