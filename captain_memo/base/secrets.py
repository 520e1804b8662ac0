"""Credentials in text about to be saved: find them, report them by line, or redact them.

The policy (doc/reliability.md): the engine stores what it is given, except that with
``CAPTAIN_MEMO_REDACT_SECRETS=1`` it redacts every finding first. Callers that save a user's
selection (the CLI's ``remember``, the editor) call ``check`` before saving: it refuses text with
findings unless the user allowed them or redaction is on, and returns what will be stored as it is
so the caller can warn. ``scan`` alone is there for a caller that wants to show findings its own way.

The patterns are the token shapes vendors document as fixed prefixes, so a hit is rarely a false
alarm, and shapes that name where a value sits (a URL's password, an Authorization header,
``mysql -p``, an Azure connection string, a ``password = ...`` assignment), which skip values that
are placeholders (``$VAR``, ``<token>``, ``***``) and, unquoted in an assignment, code
(``os.environ[...]``, ``self.password``, ``None``).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from captain_memo.base.terminal import one_line
from captain_memo.config import REDACT_ENV, redaction_on  # noqa: F401 - read in config.py, named here for callers
from captain_memo.errors import InputError


def _word(literal: str) -> str:
    """``literal`` (fixed width) where a word starts. Spelled literal first, so the regex engine looks
    for the literal's text and tries nothing elsewhere: a leading ``\\b`` made it try every position,
    0.04 s per MB per pattern, which over 16 patterns was 0.6 s per MB of prose."""
    return f"{literal}(?<!\\w{literal})"


# (kind, pattern). The secret is group 1 of a token shape; a shape that names its value instead has
# groups named ``value…`` (a placeholder there is no secret) and ``bare`` (an unquoted value, which
# must also look random and not like code). Specific shapes first: where spans overlap the first wins.
# Every repetition that could run on past a failed match is bounded, so each pattern is linear in
# the text (scripts/bench_secrets.py).
PATTERNS: tuple[tuple[str, re.Pattern], ...] = (
    (
        "private key",
        re.compile(
            r"(-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
            r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z))",
            re.DOTALL,
        ),
    ),
    ("AWS access key id", re.compile(rf"({_word('A')}(?:KIA|SIA|BIA|CCA)[0-9A-Z]{{16}})\b")),
    (
        "GitHub token",
        re.compile(rf"({_word('gh')}(?:[pousr]_[A-Za-z0-9]{{36,255}}|ithub_pat_[A-Za-z0-9_]{{22,255}}))\b"),
    ),
    # GitLab's documented prefixes: personal, OAuth, deploy, runner, CI job, trigger, feed, mail, agent, SCIM.
    (
        "GitLab token",
        re.compile(rf"({_word('gl')}(?:pat|oas|dt|rt|cbt|ptt|ft|imt|agent|soat)-[A-Za-z0-9_-]{{20,255}})(?![\w-])"),
    ),
    ("npm token", re.compile(rf"({_word('npm_')}[A-Za-z0-9]{{36}})(?![A-Za-z0-9])")),
    ("Slack token", re.compile(rf"({_word('xox')}[abposre]-(?=[A-Za-z0-9-]{{10}})(?:[A-Za-z0-9]+-)*[A-Za-z0-9]+)")),
    ("Slack webhook", re.compile(r"(https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})")),
    ("Stripe key", re.compile(rf"({_word('[sr]k')}_(?:live|test)_[A-Za-z0-9]{{16,}})\b")),
    # sk-..., sk-proj-..., sk-ant-...: random characters, so a digit is all but certain among 20+.
    ("OpenAI-style key", re.compile(r"(sk-(?<![\w-]sk-)(?=[\w-]*\d)[A-Za-z0-9_-]{20,})")),
    ("Google API key", re.compile(rf"({_word('AIza')}[0-9A-Za-z_-]{{35}})(?![\w-])")),
    (
        "JSON web token",
        re.compile(rf"({_word('eyJ')}[A-Za-z0-9_-]{{8,}}\.eyJ[A-Za-z0-9_-]{{8,}}\.[A-Za-z0-9_-]{{8,}})"),
    ),
    # A connection string's key (base64 of 64 bytes). A bare 88-character base64 value is not flagged:
    # package-lock.json's sha512 integrity hashes have the same shape.
    (
        "Azure storage key",
        re.compile(r"(?:Account|SharedAccess)Key[ \t]*=[ \t]*(?P<value>[A-Za-z0-9+/]{20,200}={0,2})"),
    ),
    # scheme://user:password@host, and scheme://:password@host (Redis).
    (
        "password in a URL",
        re.compile(r"://(?<=\w://)[^\s:/@?#\[\]\"'<>]{0,256}:(?P<value>[^\s:/@?#\[\]\"'<>]{1,256})@"),
    ),
    (
        "Authorization header",
        re.compile(
            rf"(?i){_word('authorization')}[\"']?[ \t]*[:=][ \t]*[\"']?(?:bearer|basic|token)[ \t]+"
            r"(?P<bare>[A-Za-z0-9._~+/=-]{8,4096})"
        ),
    ),
    # mysql -p<password> (no space: "-p pass" would prompt, and -P is the port).
    (
        "mysql password",
        re.compile(
            rf"{_word('mysql')}(?:dump|admin|import|check|show|slap)?\b[^\n]{{0,200}}?[ \t]-p"
            r"(?:'(?P<value>[^'\n]{1,256})'|\"(?P<value2>[^\"\n]{1,256})\"|(?P<value3>[^\s'\"]{1,256}))"
        ),
    ),
    # The name may have a prefix (db_password, AWS-SECRET): it is only required not to follow a letter
    # or digit. Matching the prefix itself cost 1 s per MB of text like "a-a-a-a-..."; this, 0.1 s.
    (
        "password or key assignment",
        re.compile(
            r"(?i)(?<![a-z0-9])(?:password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|"
            r"auth[_-]?token|access[_-]?token|token|client[_-]?secret|private[_-]?key|account[_-]?key|"
            r"storage[_-]?key)\b[\"']?[ \t]*(?:=|:=|:)[ \t]*"
            r"(?:\"(?P<value>[^\"\n\0]{4,})\"|'(?P<value2>[^'\n\0]{4,})'|(?P<bare>[^\s\"',;\0]{6,}))"
        ),
    ),
)
# An AWS secret access key is 40 random base64 characters with no prefix of its own: alone it cannot
# be told from other random text, so it counts only near what names it (an access key id, "aws",
# "secret"). Each lookahead stays within the 40 characters, so the scan is linear in the text.
AWS_SECRET = re.compile(
    r"(?<![A-Za-z0-9/+=])(?=[A-Za-z0-9/+]{0,39}[0-9/+])(?=[A-Za-z0-9/+]{0,39}[a-z])(?=[A-Za-z0-9/+]{0,39}[A-Z])"
    r"[A-Za-z0-9/+]{40}(?![A-Za-z0-9/+=])"
)
AWS_CONTEXT = re.compile(r"(?i)aws|amazon|secret|(?:AKIA|ASIA)[0-9A-Z]{16}")
AWS_CONTEXT_CHARS = 200
REDACTION_PASSES = 8
REDACTION_MARK = re.compile(r"\[REDACTED [a-zA-Z0-9 ()-]{1,60}\]")
VALUE_GROUPS = ("value", "value2", "value3", "bare")
ARMOUR = re.compile(r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----")
# Values that are not secrets: variables, templates, masks, our own redaction marks, and type names
# (`token: string`).
PLACEHOLDER = re.compile(
    r"^(?:[$%<{@]|\[REDACTED |\*+$|x+$|\.\.\.$|(?i:none|null|nil|true|false|changeme|password|secret|"
    r"redacted|example|your[-_ ].*|todo|str|string|bytes|int|number|bool|boolean|any|"
    r"unknown|secretstr|optional)$)"
)
RANDOM_LOOKING = re.compile(r"\d|[^\w-]|[a-z].*[A-Z]|[A-Z].*[a-z]")
CODE_VALUE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+$|[()\[\]]")


@dataclass(frozen=True)
class Finding:
    """One credential-looking span: what it looks like, where, and a masked preview."""

    kind: str
    line: int  # 1-based line of the span's start
    start: int  # character offsets of the secret itself in the scanned text
    end: int
    preview: str  # at most a quarter of the secret (a private key: its armour line), then a mask
    field: str = "text"  # text | title

    def describe(self) -> str:
        where = f"line {self.line}" if self.field == "text" else self.field
        return f"{where}: {self.kind} ({self.preview})"


def _secret_span(match: re.Match) -> tuple[int, int] | None:
    names = match.re.groupindex
    if not names:
        return match.span(1)
    name = next(n for n in VALUE_GROUPS if n in names and match.group(n) is not None)
    value = match.group(name).strip()
    if PLACEHOLDER.match(value):
        return None
    # Unquoted, a value must look random (a digit, a symbol, or mixed case) and not like code:
    # "password: rotated monthly" is prose, "password=hunter2" is not.
    if name == "bare" and (CODE_VALUE.search(value) or not RANDOM_LOOKING.search(value)):
        return None
    return match.span(name)


def preview(secret: str) -> str:
    """At most a quarter of the secret (four characters at most), then a mask. A private key shows
    its armour line instead: it names the key type and is not secret, and a key on one line (a
    service account's JSON holds it with literal ``\\n``) would otherwise have no first line to stop at."""
    armour = ARMOUR.match(secret)
    if armour:
        return armour.group(0) + "…"
    return one_line(secret[: min(4, len(secret) // 4)]) + "…"  # it is printed in warnings


def _masked(text: str, spans: list[tuple[int, int]]) -> str:
    """``text`` with the spans blanked out (same length), so later patterns neither match inside a
    finding nor run into one (a Slack token's trailing '-' class would swallow a key's '-----')."""
    parts, last = [], 0
    for start, end in sorted(spans):
        parts += [text[last:start], "\0" * (end - start)]
        last = end
    return "".join(parts) + text[last:]


def scan(text: str) -> list[Finding]:
    """Every credential-looking span in ``text``, in order of position, none overlapping."""
    spans: list[tuple[int, int, str]] = []
    searched = text
    for kind, pattern in PATTERNS:
        found = [span for match in pattern.finditer(searched) if (span := _secret_span(match)) is not None]
        spans += [(start, end, kind) for start, end in found]
        if found:
            searched = _masked(searched, found)
    found = _aws_secret_spans(searched)
    spans += [(start, end, "AWS secret access key") for start, end in found]
    # Lines are counted once, in order of position: counting from the top for each finding made a
    # .env file of 20,000 lines take 26 s instead of 0.1 s.
    findings, line, counted = [], 1, 0
    for start, end, kind in sorted(spans):
        line += text.count("\n", counted, start)
        counted = start
        findings.append(Finding(kind, line, start, end, preview(text[start:end])))
    return findings


def _aws_secret_spans(text: str) -> list[tuple[int, int]]:
    """AWS secret access keys: 40-character base64 runs near an access key id or the words that name
    one; not near our own marks (``[REDACTED AWS secret access key]`` names none that is there)."""
    context = REDACTION_MARK.sub(lambda mark: " " * len(mark[0]), text) if "[REDACTED " in text else text
    if not AWS_CONTEXT.search(context):
        return []
    return [
        match.span()
        for match in AWS_SECRET.finditer(text)
        if AWS_CONTEXT.search(context, max(0, match.start() - AWS_CONTEXT_CHARS), match.end() + AWS_CONTEXT_CHARS)
    ]


def redacted(text: str) -> tuple[str, list[Finding]]:
    """``text`` as it may be stored, and what was redacted in it. Private spans go first (they are
    never stored), then every finding in what is left becomes ``[REDACTED <kind>]``: scanning one
    text and replacing in another would report a redaction and store the credential. Every path
    that saves redacted text goes through here."""
    from captain_memo.base.validation import without_private

    visible = without_private(text)
    findings = scan(visible)
    clean, edits = _replaced(visible, findings)
    # A short mark in place of a long span (a private key block) brings a word that names an AWS
    # key within reach of a run of base64 the first scan found too far from it: what is stored is
    # scanned again until nothing in it reads as a credential. Each pass takes a run away and a
    # mark is never one (nor context for one), so this ends; the bound is a guard. What a later
    # pass finds is reported where it lies in the text given.
    history = [edits]
    for _ in range(REDACTION_PASSES):
        more = scan(clean)
        if not more:
            break
        findings = findings + [_found_in(visible, finding, history) for finding in more]
        clean, edits = _replaced(clean, more)
        history.append(edits)
    return clean, sorted(findings, key=lambda f: f.start)


def _replaced(text: str, findings: list[Finding]) -> tuple[str, list[tuple[int, int, int, int]]]:
    """``text`` with each finding replaced by its mark, and each edit as (start and end of the
    mark in the new text, start and end of what it replaced)."""
    out, edits, last, length = [], [], 0, 0
    for finding in findings:
        kept = text[last : finding.start]
        mark = f"[REDACTED {finding.kind}]"
        out += [kept, mark]
        start = length + len(kept)
        edits.append((start, start + len(mark), finding.start, finding.end))
        length = start + len(mark)
        last = finding.end
    out.append(text[last:])
    return "".join(out), edits


def _found_in(original: str, finding: Finding, history: list) -> Finding:
    """A finding of a later pass, placed in ``original`` through every pass's edits."""
    start, end = finding.start, finding.end
    for edits in reversed(history):
        start, end = _before(start, edits, False), _before(end, edits, True)
    line = original.count("\n", 0, start) + 1
    return Finding(finding.kind, line, start, end, preview(original[start:end]))


def _before(position: int, edits: list[tuple[int, int, int, int]], is_end: bool) -> int:
    """``position`` in a pass's output as a position in its input (inside a mark: the span it replaced)."""
    shift = 0
    for new_start, new_end, old_start, old_end in edits:
        if position < new_start or (is_end and position == new_start):
            break
        if position < new_end or (is_end and position == new_end):
            return old_end if is_end else old_start
        shift = old_end - new_end
    return position + shift


def redact(text: str) -> str:
    """``text`` without its private spans, with every finding replaced by ``[REDACTED <kind>]``."""
    return redacted(text)[0]


def redacted_json(value: Any) -> tuple[Any, list[str]]:
    """``value`` (a JSON value) with every credential in its strings replaced by its mark, and what
    was replaced, each once: ``GitHub token in #3`` (the id of the nearest object that has one).

    Everything that leaves for an agent goes through here: the user's own store keeps what it was
    given (``index`` warned "stored as is", ``remember --allow-secrets``, commit messages), but a
    model is never sent a credential. Keys are ours, not the user's text: only values are scanned."""
    found: dict[str, None] = {}
    # An answer repeats most of its strings (a store's name, a branch, a factor's name in every hit's
    # trace): each distinct one is scanned once, which took a recall's redaction from 350 scans to 128.
    scanned: dict[str, tuple[str, list[Finding]]] = {}

    def walk(item: Any, where: str) -> Any:
        if isinstance(item, str):
            if item not in scanned:
                scanned[item] = redacted(item) if item else (item, [])
            clean, findings = scanned[item]
            for finding in findings:
                found[f"{finding.kind} in {where}" if where else finding.kind] = None
            return clean
        if isinstance(item, dict):
            named = item.get("id")
            here = f"#{named}" if isinstance(named, (str, int)) and not isinstance(named, bool) else where
            return {key: walk(part, here) for key, part in item.items()}
        if isinstance(item, (list, tuple)):
            return [walk(part, where) for part in item]
        return item

    return walk(value, ""), list(found)


def redacted_memory(text: str, title: str) -> tuple[str, str, list[Finding]]:
    """A memory's text and title as they may be stored, and every finding redacted in them."""
    text, in_text = redacted(text)
    title, in_title = redacted(title)
    return text, title, [replace(f, field="title") for f in in_title] + in_text


class SecretsFoundError(InputError):
    """The text looks like it holds credentials and saving them was not allowed."""

    def __init__(self, message: str, findings: list[Finding]):
        super().__init__(message)
        self.findings = findings


def describe(findings: list[Finding]) -> str:
    return "; ".join(f.describe() for f in findings)


def check(
    text: str,
    title: str = "",
    allow: bool = False,
    how_to_allow: str = "allow it",
    env: Mapping[str, str] | None = None,
) -> list[Finding]:
    """The saving policy for a user's text: the findings that will be stored as they are.

    Returns [] when nothing was found or redaction is on (the engine then redacts). Raises
    SecretsFoundError, naming each finding's line and kind, when there are findings and the caller
    did not ``allow`` them; ``how_to_allow`` names the caller's way to allow (a flag, a prompt).
    Text inside ``<private>`` spans is not scanned: it is never stored.
    """
    from captain_memo.base.validation import MAX_BODY_CHARS, MAX_TITLE_CHARS, checked_text, without_private

    # Refused before scanning: what the engine would refuse anyway is not worth a scan.
    checked_text("text", text, MAX_BODY_CHARS)
    checked_text("title", title, MAX_TITLE_CHARS)
    if redaction_on(env):
        return []
    findings = [replace(f, field="title") for f in scan(without_private(title))] + scan(without_private(text))
    if findings and not allow:
        raise SecretsFoundError(
            f"nothing was saved: the text looks like it holds credentials ({describe(findings)}); remove them, "
            f"wrap them in <private>...</private>, {how_to_allow} to store them as they are, or set "
            f"{REDACT_ENV}=1 to store them redacted",
            findings,
        )
    return findings
