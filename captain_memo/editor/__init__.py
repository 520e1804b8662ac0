"""What the Neovim plugin asks of Captain Memo: the request service, its settings, and the health
check (captain_memo/health.py, shared with `doctor`)."""

from captain_memo.contexts import ContextCache
from captain_memo.editor.health import health_main, health_report
from captain_memo.editor.service import EditorService, one_line, open_memo
from captain_memo.editor.settings import EditorSettings

__all__ = [
    "ContextCache",
    "EditorService",
    "EditorSettings",
    "health_main",
    "health_report",
    "one_line",
    "open_memo",
]
