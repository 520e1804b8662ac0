"""Credential-looking text is flagged before saving, redacted on request, and never a false alarm
on ordinary code and prose. Tokens are assembled at run time so the repository holds none."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from captain_memo.base import secrets
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
ASSIGNMENTS = [
    'password = "' + "correct horse" + '"',
    "DB_PASSWORD=" + "hunter2x",
    "api_key: '" + ALNUM[:12] + "'",
    '"client_secret": "' + ALNUM[:16] + '"',
    "export AWS_SECRET_ACCESS_KEY=" + ALNUM + "12345678",
]
HARMLESS = [
    "password = os.environ['DB_PASSWORD']",
    "api_key=settings.API_KEY",
    "token: string",
    "password: str",
    "def login(user, password=None):",
    "the password: rotated monthly by the ops team",
    "secret = get_secret(name)",
    "token=${GITHUB_TOKEN}",
    "password=<your password>",
    "API_KEY=***",
    "A task-management-system-for-everyone-in-the-team",
    "sk-learn is not a package name",
    "see https://github.com/org/repo/pull/123",
    "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39",
    "uuid 123e4567-e89b-12d3-a456-426614174000",
    "the secretary: Jane",
    "passwords must be 12+ chars",
]


@pytest.mark.parametrize("kind", list(TOKENS))
def test_each_token_shape_is_found_on_its_line_and_masked(kind):
    text = f"deploy notes\n\nthe value is {TOKENS[kind]} (staging)\n"
    found = secrets.scan(text)
    assert [(f.kind, f.line) for f in found] == [(kind, 3)]
    assert text[found[0].start : found[0].end] == TOKENS[kind]
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


# Our own mark "[REDACTED AWS access key id]" stood beside a base64 run the first scan had judged too
# far from the key id it replaced: the mark's "AWS" made the stored text read as holding a secret key.
MARK_BRINGS_CONTEXT = (
    "AKIA0000000000000000-----BEGIN RSA PRIVATE KEY-----\n"
    "MIIEowaB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC\n"
    "aB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC\n"
    "-----END RSA PRIVATE KEY-----0AIzaaB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCabc"
)
RUN = "uMDhB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zCaB3dE"  # 40 base64 characters, no credential alone


def test_a_redaction_mark_is_no_context_for_an_aws_secret_key():
    clean, findings = secrets.redacted(MARK_BRINGS_CONTEXT)
    assert secrets.scan(clean) == [] and [f.kind for f in findings] == ["AWS access key id", "private key"]
    many = "AWS\n" + "".join(f"{'.' * 60}\n{RUN[:-2]}{i:02d}\n" for i in range(14))
    once = secrets.redact(many)
    assert secrets.scan(once) == [] and secrets.redact(once) == once, "no cascade from one mark to the next"


def test_a_run_brought_within_reach_by_a_shorter_mark_is_redacted_and_placed_where_it_was():
    """A word that names an AWS key, far from a base64 run in the text given, comes within reach
    once a long private key between them is replaced by its short mark: a second pass redacts the
    run, and reports it on its line of the text given."""
    key = "-----BEGIN RSA PRIVATE KEY-----\n" + "\n".join(["MIIEowaB3dE5gH7jK9mN1pQ2rS4tU6vW8xY0zC"] * 8)
    text = "the aws secret for staging:\n" + key + "\n-----END RSA PRIVATE KEY-----\n" + RUN + "\n"
    assert [f.kind for f in secrets.scan(text)] == ["private key"]  # the run is too far from "aws" here
    clean, findings = secrets.redacted(text)
    assert secrets.scan(clean) == [] and RUN not in clean
    run = findings[-1]
    assert run.kind == "AWS secret access key" and text[run.start : run.end] == RUN
    assert run.line == text[: text.index(RUN)].count("\n") + 1 == 12


@settings(max_examples=300, deadline=None)
@given(
    st.lists(
        st.one_of(
            st.text(max_size=30),
            st.sampled_from(
                [*TOKENS.values(), *ASSIGNMENTS, *HARMLESS, "password=", "-----BEGIN PRIVATE KEY-----", "\n"]
            ),
        ),
        max_size=12,
    ).map("".join)
)
@example(MARK_BRINGS_CONTEXT)
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


HOSTILE = '("a-" * 500_000, "-----BEGIN PRIVATE KEY-----" * 30_000, "password=" * 100_000, "sk-" + "a-" * 400_000)'


def test_a_megabyte_of_hostile_text_is_scanned():
    """The patterns are linear: each text is scanned in a child process that a hang would keep past
    the timeout (a backtracking pattern takes hours on these), and every finding lies in the text."""
    code = (
        "from captain_memo.base import secrets\n"
        f"for text in {HOSTILE}:\n"
        "    found = secrets.scan(text)\n"
        "    assert all(0 <= f.start < f.end <= len(text) for f in found)\n"
        "print('scanned')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)
    assert (done.returncode, done.stdout.strip()) == (0, "scanned"), done.stderr


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
        proc = subprocess.run(
            [sys.executable, support, "cli", *argv], env={**env, **extra}, capture_output=True, text=True, timeout=120
        )
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


# Shapes named by their value: (kind, text, the secret inside it).
VALUE_SHAPES = [
    ("password in a URL", "DATABASE_URL=postgres://app:" + "s3cretPass" + "@db.internal:5432/app", "s3cretPass"),
    ("password in a URL", "clone https://deploy:" + "hunter2" + "@git.example.org/repo.git", "hunter2"),
    ("password in a URL", "cache at redis://:" + "p4ssw0rd" + "@10.0.0.5:6379/0", "p4ssw0rd"),
    ("Authorization header", "curl -H 'Authorization: Bearer " + ALNUM[:20] + "' https://api", ALNUM[:20]),
    ("Authorization header", "Authorization: Basic " + "dXNlcjpwYXNzd29yZA==", "dXNlcjpwYXNzd29yZA=="),
    ("GitLab token", "export GL_TOKEN=" + "glpat-" + ALNUM[:20], "glpat-" + ALNUM[:20]),
    ("npm token", "//registry.npmjs.org/:_authToken=" + "npm_" + ALNUM + "abcd", "npm_" + ALNUM + "abcd"),
    (
        "Azure storage key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey="
        + ALNUM * 2
        + "abcdefghijklmnopqrstuv=="
        + ";EndpointSuffix=core.windows.net",
        ALNUM * 2 + "abcdefghijklmnopqrstuv==",
    ),
    ("mysql password", "mysql -u root -p" + "Tr0ub4dor" + " shop < dump.sql", "Tr0ub4dor"),
    ("mysql password", "mysqldump -uadmin -p'" + "pa ss" + "' shop", "pa ss"),
]
ORDINARY = [
    "postgres://localhost:5432/app",
    "https://example.com/path?q=1#top",
    "git@github.com:org/repo.git",
    "ssh://git@github.com:22/org/repo",
    "mail jane@example.com",
    "postgres://app:${DB_PASSWORD}@db/app",
    "https://user:password@host/ is the form of a URL with a password",
    "http://[::1]:8080/health",
    "the Authorization header carries a bearer token",
    "Authorization: Bearer $TOKEN",
    "mysql -u root -p shop",
    "mysql -h db -P 3306 shop",
    "npm_config_cache=/tmp/npm",
    "npm install --save-dev",
    '"integrity": "sha512-' + ALNUM * 2 + 'abcdefghijklmnopqrstuv=="',
    "glpat tokens expire after a year",
    "for (i = 0; i < n; i++) { total += price[i]; }",
    "SELECT * FROM users WHERE id = :id",
    "ratio = a:b@c",
    "See RFC 3986 for user:pass@host URLs.",
]


@pytest.mark.parametrize(
    "kind, text, secret", VALUE_SHAPES, ids=[f"{k}-{i}" for i, (k, _, _) in enumerate(VALUE_SHAPES)]
)
def test_each_common_credential_shape_is_found(kind, text, secret):
    found = secrets.scan("notes\n" + text)
    assert [(f.kind, f.line) for f in found] == [(kind, 2)]
    assert ("notes\n" + text)[found[0].start : found[0].end] == secret
    assert secret not in found[0].describe()


@pytest.mark.parametrize("text", ORDINARY)
def test_ordinary_urls_headers_commands_and_code_are_not_flagged(text):
    assert secrets.scan(text) == []


def test_a_private_key_on_one_line_shows_only_its_armour():
    """A service account's JSON holds the PEM block on one line, with literal backslash-n."""
    body = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASC" + ALNUM * 3
    text = (
        '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\n'
        + body
        + '\\n-----END PRIVATE KEY-----\\n", "client_email": "bot@project.iam.gserviceaccount.com"}'
    )
    [found] = secrets.scan(text)
    assert found.kind == "private key"
    assert found.preview == "-----BEGIN PRIVATE KEY-----…"
    assert body[:8] not in found.describe()


@settings(max_examples=200, deadline=None)
@given(st.sampled_from([*TOKENS.values(), *(secret for _, _, secret in VALUE_SHAPES)]), st.text(max_size=20))
def test_a_preview_shows_at_most_a_quarter_of_the_secret(token, noise):
    for f in secrets.scan(noise + " " + token + " " + noise):
        shown = f.preview.removesuffix("…")
        secret = (noise + " " + token + " " + noise)[f.start : f.end]
        if not secrets.ARMOUR.fullmatch(shown):
            assert len(shown) <= len(secret) // 4 and secret.startswith(shown)


class CountingText(str):
    """Text that adds up how many characters ``count`` was asked to look at."""

    looked_at = 0

    def count(self, sub, start=0, end=None):
        end = len(self) if end is None else end
        CountingText.looked_at += max(0, end - start)
        return super().count(sub, start, end)


def test_line_numbers_are_counted_in_one_pass():
    """A per-finding count from the top made 20,000 .env lines take 26 s (doc/reliability.md)."""
    text = CountingText("".join(f"SERVICE_{n}_PASSWORD=h{n:07d}Xq9\n" for n in range(3000)))
    CountingText.looked_at = 0
    found = secrets.scan(text)
    assert len(found) == 3000 and found[-1].line == 3000
    assert CountingText.looked_at <= len(text)


def test_text_over_the_size_limit_is_refused_before_it_is_scanned(monkeypatch):
    def no_scan(text):
        raise AssertionError("scanned text that is refused anyway")

    monkeypatch.setattr(secrets, "scan", no_scan)
    with pytest.raises(InputError, match="the limit is 1,000,000"):
        secrets.check("password=hunter2x\n" * 60_000, env={})
    with pytest.raises(InputError, match="title is"):
        secrets.check("fine", title="t" * 1001, env={})


AWS_SECRET = "wJalrXUtnFEMI/" + "K7MDENG/bPxRfiCY" + "EXAMPLEKEY"


def test_an_aws_secret_access_key_in_prose_is_redacted_beside_its_key_id():
    text = f"AWS key {TOKENS['AWS access key id']} with secret {AWS_SECRET} for the uploads bucket"
    clean, findings = secrets.redacted(text)
    assert [f.kind for f in findings] == ["AWS access key id", "AWS secret access key"]
    assert AWS_SECRET not in clean and TOKENS["AWS access key id"] not in clean
    assert clean.endswith("with secret [REDACTED AWS secret access key] for the uploads bucket")


@pytest.mark.parametrize(
    "text",
    [
        "commit 3f2a9c1e8b7d6a5f4e3d2c1b0a9f8e7d6c5b4a39 rotated the secret",
        "a build id ABCDEFGHIJabcdefghij0123456789ABCDEFGHIJ with no cloud word near it",
        "secret sauce: " + "a" * 40,
    ],
)
def test_forty_random_looking_characters_are_no_aws_secret_without_what_names_one(text):
    assert secrets.scan(text) == []


def test_private_spans_go_before_the_scan_so_what_is_reported_is_what_is_redacted():
    """A span inside a token: scanned without it but replaced in the text with it, the token was
    reported redacted and stored whole."""
    key = TOKENS["AWS access key id"]
    text = f"{key[:8]}<private>(rotated)</private>{key[8:]} and {TOKENS['GitHub token']}"
    clean, findings = secrets.redacted(text)
    assert [f.kind for f in findings] == ["AWS access key id", "GitHub token"]
    assert clean == "[REDACTED AWS access key id] and [REDACTED GitHub token]"
    assert secrets.redact(text) == clean


def test_a_json_answer_is_redacted_at_every_depth_and_says_where():
    """What leaves for an agent (agent_tools.run): every string, however deep, through the same
    redactor as saving; keys and numbers as they were; each finding named once, by the id of the
    nearest object that has one."""
    token = "ghp_" + "a1B2" * 9
    answer = {
        "id": "3",
        "title": f"deploy with {token}",
        "hits": [
            {"id": "t8", "lines": ['password = "hunter2hunter2"', f"again {token}"], "score": 0.5},
            {"rank": 2, "text": "nothing here"},
        ],
        "notice": f"token {token}",
    }
    clean, said = secrets.redacted_json(answer)
    assert token not in json.dumps(clean) and "hunter2hunter2" not in json.dumps(clean)
    assert clean["title"] == "deploy with [REDACTED GitHub token]" and clean["hits"][0]["score"] == 0.5
    assert clean["hits"][1] == {"rank": 2, "text": "nothing here"} and set(clean) == set(answer)
    assert said == ["GitHub token in #3", "password or key assignment in #t8", "GitHub token in #t8"]
    assert secrets.redacted_json(clean) == (clean, [])


def test_a_string_repeated_in_an_answer_is_scanned_once_and_named_wherever_it_is(monkeypatch):
    """A recall's answer repeats most of its strings (the store, the branch, each factor's name in
    every hit's trace): scanning each distinct one once took a recall's redaction from 350 scans to
    128; a credential repeated in two memories is still named in both."""
    token = "ghp_" + "a1B2" * 9
    scans = []
    real = secrets.redacted
    monkeypatch.setattr(secrets, "redacted", lambda text: scans.append(text) or real(text))
    hits = [{"id": str(n), "store": "local", "branch": "main", "title": f"uses {token}"} for n in (1, 2, 1)]
    clean, said = secrets.redacted_json({"hits": hits})
    assert sorted(scans) == sorted({"1", "2", "local", "main", f"uses {token}"})
    assert said == ["GitHub token in #1", "GitHub token in #2"]
    assert all(hit["title"] == "uses [REDACTED GitHub token]" for hit in clean["hits"])
