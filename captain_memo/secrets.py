"""Credentials in text about to be saved: find them, report them by line, or redact them.

The policy (doc/reliability.md): the engine stores what it is given, except that with
``CAPTAIN_MEMO_REDACT_SECRETS=1`` it redacts every finding first. Callers that save a user's
selection (the CLI's ``remember``, the editor) call ``check`` before saving: it refuses text with
findings unless the user allowed them or redaction is on, and returns what will be stored as it is
so the caller can warn. ``scan`` alone is there for a caller that wants to show findings its own way.

The patterns are the token shapes vendors document as fixed prefixes, so a hit is rarely a false
alarm; the generic ``password = ...`` rule skips values that are code (``os.environ[...]``,
``self.password``, ``None``) or placeholders (``$VAR``, ``<token>``, ``***``).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, replace

from captain_memo.errors import InputError

REDACT_ENV = "CAPTAIN_MEMO_REDACT_SECRETS"

# (kind, pattern, group holding the secret). Specific shapes first: where spans overlap the first wins.
PATTERNS: tuple[tuple[str, re.Pattern, int], ...] = (
    ("private key", re.compile(
        r"-----BEGIN[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----"
        r"(?:.*?-----END[A-Z0-9 ]*PRIVATE KEY(?: BLOCK)?-----|.*\Z)", re.DOTALL), 0),
    ("AWS access key id", re.compile(r"\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b"), 1),
    ("GitHub token", re.compile(r"\b(gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"), 1),
    ("Slack token", re.compile(r"\b(xox[abposre]-(?=[A-Za-z0-9-]{10})(?:[A-Za-z0-9]+-)*[A-Za-z0-9]+)"), 1),
    ("Slack webhook", re.compile(r"(https://hooks\.slack\.com/services/[A-Za-z0-9/_-]{20,})"), 1),
    ("Stripe key", re.compile(r"\b((?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,})\b"), 1),
    # sk-..., sk-proj-..., sk-ant-...: random characters, so a digit is all but certain among 20+.
    ("OpenAI-style key", re.compile(r"(?<![\w-])(sk-(?=[\w-]*\d)[A-Za-z0-9_-]{20,})"), 1),
    ("Google API key", re.compile(r"\b(AIza[0-9A-Za-z_-]{35})(?![\w-])"), 1),
    ("JSON web token", re.compile(r"\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})"), 1),
    # The name may have a prefix (db_password, AWS-SECRET): it is only required not to follow a letter
    # or digit. Matching the prefix itself cost 1 s per MB of text like "a-a-a-a-..."; this, 0.1 s.
    ("password or key assignment", re.compile(
        r"(?i)(?<![a-z0-9])(?:password|passwd|pwd|passphrase|secret|api[_-]?key|apikey|access[_-]?key|"
        r"auth[_-]?token|access[_-]?token|token|client[_-]?secret|private[_-]?key)\b[\"']?[ \t]*(?:=|:=|:)[ \t]*"
        r"(?:\"([^\"\n\0]{4,})\"|'([^'\n\0]{4,})'|([^\s\"',;\0]{6,}))"), 0),
)
# Values that are not secrets: variables, templates, masks, our own redaction marks, and type names
# (`token: string`).
PLACEHOLDER = re.compile(r"^(?:[$%<{@]|\[REDACTED |\*+$|x+$|\.\.\.$|(?i:none|null|nil|true|false|changeme|password|secret|"
                         r"redacted|example|your[-_ ].*|todo|str|string|bytes|int|number|bool|boolean|any|"
                         r"unknown|secretstr|optional)$)")
RANDOM_LOOKING = re.compile(r"\d|[^\w-]|[a-z].*[A-Z]|[A-Z].*[a-z]")
CODE_VALUE = re.compile(r"^[A-Za-z_][\w]*(?:\.[A-Za-z_]\w*)+$|[()\[\]]")


@dataclass(frozen=True)
class Finding:
    """One credential-looking span: what it looks like, where, and a masked preview."""

    kind: str
    line: int  # 1-based line of the span's start
    start: int  # character offsets of the secret itself in the scanned text
    end: int
    preview: str  # at most a quarter of the secret's first line, then a mask
    field: str = "text"  # text | title

    def describe(self) -> str:
        where = f"line {self.line}" if self.field == "text" else self.field
        return f"{where}: {self.kind} ({self.preview})"


def _secret_span(kind: str, match: re.Match, group: int) -> tuple[int, int] | None:
    if kind != "password or key assignment":
        return match.span(group)
    number = next(i for i in (1, 2, 3) if match.group(i) is not None)
    value = match.group(number).strip()
    if PLACEHOLDER.match(value):
        return None
    # Unquoted, a value must look random (a digit, a symbol, or mixed case) and not like code:
    # "password: rotated monthly" is prose, "password=hunter2" is not.
    if number == 3 and (CODE_VALUE.search(value) or not RANDOM_LOOKING.search(value)):
        return None
    return match.span(number)


def _mask(secret: str) -> str:
    if secret.startswith("-----BEGIN"):
        return secret.split("\n", 1)[0] + "…"  # the armour line names the key type and is not secret
    return secret[: min(4, len(secret) // 4)] + "…"


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
    found: list[Finding] = []
    searched = text
    for kind, pattern, group in PATTERNS:
        spans = [span for match in pattern.finditer(searched)
                 if (span := _secret_span(kind, match, group)) is not None]
        for start, end in spans:
            found.append(Finding(kind, text.count("\n", 0, start) + 1, start, end, _mask(text[start:end])))
        if spans:
            searched = _masked(searched, spans)
    return sorted(found, key=lambda f: f.start)


def redact(text: str) -> str:
    """``text`` with every finding replaced by ``[REDACTED <kind>]``."""
    out, last = [], 0
    for finding in scan(text):
        out.append(text[last: finding.start])
        out.append(f"[REDACTED {finding.kind}]")
        last = finding.end
    out.append(text[last:])
    return "".join(out)


def redaction_on(env: dict | None = None) -> bool:
    """Whether ``CAPTAIN_MEMO_REDACT_SECRETS`` asks for redaction before saving."""
    env = os.environ if env is None else env
    return (env.get(REDACT_ENV) or "").strip().lower() in ("1", "true", "yes", "on")


class SecretsFoundError(InputError):
    """The text looks like it holds credentials and saving them was not allowed."""

    def __init__(self, message: str, findings: list[Finding]):
        super().__init__(message)
        self.findings = findings


def describe(findings: list[Finding]) -> str:
    return "; ".join(f.describe() for f in findings)


def check(text: str, title: str = "", allow: bool = False, how_to_allow: str = "allow it",
          env: dict | None = None) -> list[Finding]:
    """The saving policy for a user's text: the findings that will be stored as they are.

    Returns [] when nothing was found or redaction is on (the engine then redacts). Raises
    SecretsFoundError, naming each finding's line and kind, when there are findings and the caller
    did not ``allow`` them; ``how_to_allow`` names the caller's way to allow (a flag, a prompt).
    Text inside ``<private>`` spans is not scanned: it is never stored.
    """
    from captain_memo.validation import without_private

    if redaction_on(env):
        return []
    findings = [replace(f, field="title") for f in scan(without_private(title))] + scan(without_private(text))
    if findings and not allow:
        raise SecretsFoundError(
            f"nothing was saved: the text looks like it holds credentials ({describe(findings)}); remove them, "
            f"wrap them in <private>...</private>, {how_to_allow} to store them as they are, or set "
            f"{REDACT_ENV}=1 to store them redacted", findings)
    return findings
