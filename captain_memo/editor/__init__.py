"""What the Neovim plugin asks of Captain Memo: the request service, its settings, and the health
check (captain_memo/engine/probes.py, shared with `doctor`)."""

from captain_memo.base.git_context_cache import ContextCache
from captain_memo.editor.checkhealth import health_main, health_report
from captain_memo.editor.editor_requests import EditorService, one_line, open_memo
from captain_memo.hosting.editor_settings import EditorSettings

__all__ = [
    "ContextCache",
    "EditorService",
    "EditorSettings",
    "health_main",
    "health_report",
    "one_line",
    "open_memo",
]
