"""Measuring the ranker on public BEIR-style retrieval sets: loader, metrics, embedding cache, runner."""
