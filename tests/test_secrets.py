"""Credential-looking text is flagged before saving, redacted on request, and never a false alarm
on ordinary code and prose. Tokens are assembled at run time so the repository holds none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from captain_memo import secrets
from captain_memo.errors import InputError
from captain_memo.store import NewMemory

ALNUM = "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"
KEY_BODY = "MIIEow" + ALNUM * 2 + "\n" + ALNUM * 2
TOKENS = {
    "private key": "-----BEGIN RSA PRIVATE KEY-----\n" + KEY_BODY + "\n-----END RSA PRIVATE KEY-----",
    "AWS access key id": "AKIA" + "IOSFODNN7" + "EXAMPLE",
    "GitHub token": "ghp_" + ALNUM + "abcd",
    "Slack token": "xoxb-" + "123456789012-" + ALNUM[:24],
    "OpenAI-style key": "sk-" + "proj-" + ALNUM,
    "Stripe key": "sk_" + "live_" + ALNUM[:24],
    "Google API key": "AIza" + ALNUM + "abc",
    "JSON web token": "eyJ" + "hbGciOiJIUzI1NiJ9" + ".eyJ" + "zdWIiOiIxMjM0NTY3ODkwIn0" + "." + ALNUM,
}
ASSIGNMENTS = ['password = "' + "correct horse" + '"', "DB_PASSWORD=" + "hunter2x", "api_key: '" + ALNUM[:12] + "'",
               '"client_secret": "' + ALNUM[:16] + '"', "export AWS_SECRET_ACCESS_KEY=" + ALNUM + "12345678"]
HARMLESS = [
    "password = os.environ['DB_PASSWORD']", "api_key=settings.API_KEY", "token: string", "password: str",
    "def login(user, password=None):", "the password: rotated monthly by the ops team",
    "secret = get_secret(name)", "token=${GITHUB_TOKEN}", "password=<your password>", "API_KEY=***",
    "A task-management-system-for-everyone-in-the-team", "sk-learn is not a package name",
    "see https://github.com/org/repo/pull/123", "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "uuid 123e4567-e89b-12d3-a456-426614174000", "the secretary: Jane", "passwords must be 12+ chars",
]


@pytest.mark.parametrize("kind", list(TOKENS))
def test_each_token_shape_is_found_on_its_line_and_masked(kind):
    text = f"deploy notes\n\nthe value is {TOKENS[kind]} (staging)\n"
    found = secrets.scan(text)
    assert [(f.kind, f.line) for f in found] == [(kind, 3)]
    assert text[found[0].start: found[0].end] == TOKENS[kind]
    assert TOKENS[kind] not in found[0].preview and TOKENS[kind][8:] not in found[0].describe()


@pytest.mark.parametrize("line", ASSIGNMENTS)
def test_assignments_of_literal_values_are_found(line):
    found = secrets.scan("config:\n" + line)
    assert [(f.kind, f.line) for f in found] == [("password or key assignment", 2)]


@pytest.mark.parametrize("text", HARMLESS)
def test_code_placeholders_and_prose_are_not_flagged(text):
    assert secrets.scan(text) == []


def test_redact_removes_every_secret_and_keeps_the_rest():
    text = "\n".join([*TOKENS.values(), *ASSIGNMENTS, *HARMLESS])
    clean = secrets.redact(text)
    for token in TOKENS.values():
        assert token not in clean
    assert "hunter2x" not in clean and "correct horse" not in clean
    assert all(line in clean for line in HARMLESS)
    assert clean.count("[REDACTED ") == len(TOKENS) + len(ASSIGNMENTS)
    assert secrets.scan(clean) == [] and secrets.redact(clean) == clean


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(st.text(max_size=30), st.sampled_from([*TOKENS.values(), *ASSIGNMENTS, *HARMLESS,
                                                                   "password=", "-----BEGIN PRIVATE KEY-----", "\n"])),
                max_size=12).map("".join))
def test_findings_point_at_their_text_and_redaction_leaves_none(text):
    found = secrets.scan(text)
    for f in found:
        assert 0 <= f.start < f.end <= len(text)
        assert f.line == text.count("\n", 0, f.start) + 1
    assert all(a.end <= b.start for a, b in zip(found, found[1:]))  # ordered, never overlapping
    clean = secrets.redact(text)
    assert secrets.scan(clean) == []
    if not found:
        assert clean == text


def test_a_megabyte_of_hostile_text_is_scanned():
    for text in ("a-" * 500_000, "-----BEGIN PRIVATE KEY-----" * 30_000, "password=" * 100_000, "sk-" + "a-" * 400_000):
        secrets.scan(text)  # the patterns are linear: none of these may hang


def test_check_refuses_naming_lines_unless_allowed_or_redacting():
    text = "notes\n" + TOKENS["GitHub token"]
    with pytest.raises(secrets.SecretsFoundError) as refused:
        secrets.check(text, how_to_allow="pass --yes", env={})
    assert isinstance(refused.value, InputError)
    assert "line 2: GitHub token" in str(refused.value) and "pass --yes" in str(refused.value)
    assert TOKENS["GitHub token"] not in str(refused.value)
    assert [f.kind for f in secrets.check(text, allow=True, env={})] == ["GitHub token"]
    assert secrets.check(text, env={secrets.REDACT_ENV: "1"}) == []
    assert secrets.check("x <private>" + TOKENS["GitHub token"] + "</private>", env={}) == []
    with pytest.raises(secrets.SecretsFoundError, match="title: AWS access key id"):
        secrets.check("body", title="key " + TOKENS["AWS access key id"], env={})


def test_the_engine_redacts_body_title_and_index_when_asked(engine, monkeypatch):
    from captain_memo.ranking.query import fts_match
    from captain_memo.store.search import Scope, keyword_leg

    token = TOKENS["Slack token"]
    monkeypatch.setenv(secrets.REDACT_ENV, "1")
    memory_id = engine.remember(NewMemory(body=f"the bot uses {token} to post", title=f"bot {token}"))
    memory = engine.store.get(memory_id)
    assert token not in memory.body + memory.title
    assert memory.body == "the bot uses [REDACTED Slack token] to post"
    assert all(token not in c.text for c in engine.store.chunks_of(memory_id))
    assert keyword_leg(engine.store, fts_match(token), Scope(all_projects=True), 25) == {}

    monkeypatch.delenv(secrets.REDACT_ENV)
    kept = engine.remember(NewMemory(body=f"stored as given: {token}"))  # the engine leaves policy to callers
    assert token in engine.store.get(kept).body


def test_cli_remember_refuses_then_allows_then_redacts(tmp_path):
    from reliability_support import child_env

    env = child_env(CAPTAIN_MEMO_HOME=str(tmp_path), CAPTAIN_MEMO_DB=str(tmp_path / "memo.db"))
    support = str(__import__("reliability_support").__file__)
    text = "deploy with " + TOKENS["AWS access key id"]

    def cli(*argv, **extra):
        proc = subprocess.run([sys.executable, support, "cli", *argv], env={**env, **extra}, capture_output=True,
                              text=True, timeout=120)
        return proc.returncode, proc.stdout.removeprefix("started\n"), proc.stderr

    code, out, err = cli("remember", "--project", "none", text)
    assert code == 1 and "line 1: AWS access key id" in err and "--allow-secrets" in err, err
    assert "Traceback" not in err and TOKENS["AWS access key id"] not in err
    code, out, err = cli("stats", "--json")
    assert json.loads(out)["memories"] == 0  # nothing was saved

    code, out, err = cli("remember", "--project", "none", "--allow-secrets", text)
    assert code == 0 and "warning: storing a credential as it is" in err, err
    code, out, err = cli("remember", "--project", "none", text + " again", CAPTAIN_MEMO_REDACT_SECRETS="1")
    assert code == 0, err
    code, out, err = cli("show", "--json", "2")
    assert json.loads(out)["body"] == "deploy with [REDACTED AWS access key id] again"
