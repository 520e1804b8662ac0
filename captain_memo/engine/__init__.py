"""The engine: one store, one embedder, one ranker (core.py), with the team store's fan-out,
index change plans, diagnostics and counts beside it."""
