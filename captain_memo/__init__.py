"""Captain Memo: a developer's memory, stored locally and recalled by a hybrid ranker."""

__version__ = "0.1.0"
