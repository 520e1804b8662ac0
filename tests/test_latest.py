""" "latest" finds the newest: on a generated history of dated commits indexed with ``index --git``,
the newest commit that touched a module is in the top 3 for "latest change to <module>" and "what
changed most recently in <module>"."""

from __future__ import annotations

import pytest

from captain_memo.base.git_context import git_context
from captain_memo.bench.latest import FORMS, MODULES, generate_history, measure, newest_per_module
from captain_memo.engine.core import Engine
from captain_memo.sources.git_history import index_history
from captain_memo.store import Store


@pytest.fixture(scope="module")
def history(tmp_path_factory, local_embedder):
    root = tmp_path_factory.mktemp("latest") / "repo"
    generate_history(root, commits=320)
    engine = Engine(Store(root.parent / "memo.db"), local_embedder)
    report = index_history(engine, root)
    yield engine, root, report
    engine.close()


@pytest.mark.slow
def test_the_newest_commit_of_a_module_is_in_the_top_three(history):
    engine, root, report = history
    assert report.indexed == 320
    newest = newest_per_module(root, 5000, under="src/")
    assert set(newest) == set(MODULES)  # 30 modules, each touched by several commits
    result = measure(engine, git_context(root).project, newest)
    for form in FORMS:
        assert result.share(form) >= 0.8, (form, result.misses)


@pytest.mark.slow
def test_v2_the_seed_design_misses_most_of_them(history):
    """The same history under v2, which has none of it: the check above is not an easy one."""
    engine, root, _ = history
    newest = newest_per_module(root, 5000, under="src/")
    result = measure(engine, git_context(root).project, newest, profile="v2")
    assert result.share(FORMS[0]) < 0.5
