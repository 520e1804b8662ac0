"""Captain Memo: a developer's memory, stored locally and recalled by a hybrid ranker.

``from captain_memo import Memo`` is a library user's first line; ``Memo`` is imported when first
asked for, so ``import captain_memo`` (which every module's import runs) stays cheap for the thin
command line.
"""

from __future__ import annotations

TYPE_CHECKING = False  # as typing's, which costs the thin command line ~3 ms to import
if TYPE_CHECKING:
    from captain_memo.memo import Memo

__version__ = "0.1.0"
__all__ = ["Memo", "__version__"]


def __getattr__(name: str):
    if name == "Memo":
        from captain_memo.memo import Memo

        return Memo
    raise AttributeError(f"module 'captain_memo' has no attribute {name!r}")
