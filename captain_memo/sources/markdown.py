"""Markdown notes into sections and chunks.

A file becomes one section per ``#``/``##`` heading, ATX (``## Title``) or setext (``Title`` over
``===`` or ``---``); text before the first heading is the file's preamble. The block structure is
CommonMark's, read by markdown-it-py (block rules only): a ``## line`` inside a fenced code block,
an HTML comment or an HTML block is not a heading. A fenced code block is opaque: no split ever
falls inside it, even in a list or a quote. A section longer than the chunk cap is packed into
several chunks at paragraph boundaries. Every chunk starts with its heading path (``Title >
Section > Subsection``) so a hit shows where in the file it came from, and both legs can find a
chunk by its headings.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from functools import cache, cached_property
from typing import Any

from captain_memo.base.chunking import MAX_CHUNK_CHARS, split_paragraphs

PATH_SEPARATOR = " > "
# The heading path may take at most this share of a chunk, so a deep path never starves the text.
MAX_PATH_SHARE = 0.25


@dataclass(frozen=True)
class FrontMatter:
    title: str | None = None
    date: float | None = None
    tags: tuple[str, ...] = ()
    description: str | None = None
    date_error: str | None = None  # the raw value when a date was given but could not be read
    # Every key (lower-cased) with its value: what an agent's rule says about where it applies.
    data: Mapping[str, object] = field(default_factory=dict, compare=False, repr=False)
    # Why YAML refused the block, when it was read with the simple reader instead.
    fallback: str | None = None


@dataclass(frozen=True)
class Section:
    """One ``#``/``##`` section: its heading path, raw text, line range (1-based) and chunks."""

    anchor: str  # stable within the file: the heading text as a slug, with a suffix when repeated
    path: tuple[str, ...]
    text: str
    line_start: int
    line_end: int
    blocks: tuple = field(repr=False, compare=False)
    max_chars: int = MAX_CHUNK_CHARS

    @property
    def title(self) -> str:
        return PATH_SEPARATOR.join(self.path)

    @cached_property
    def chunks(self) -> tuple[str, ...]:
        # Computed on first use: re-indexing compares a section's text first, and an unchanged
        # section (the common case) is never chunked.
        return tuple(_chunks(self.path, list(self.blocks), self.max_chars))


@dataclass(frozen=True)
class Note:
    title: str
    front: FrontMatter
    sections: tuple[Section, ...]


# -- front matter ------------------------------------------------------------------------------


def split_front_matter(lines: list[str]) -> tuple[dict[str, object], int]:
    """The front matter's keys and how many lines it takes (0 when the file has none)."""
    block, taken = front_block(lines)
    return read_front(block)[0], taken


def front_block(lines: list[str]) -> tuple[list[str], int]:
    """The lines between a leading ``---`` and its closing ``---`` (or ``...``), and how many lines
    the front matter takes (0 when the file has none)."""
    if not lines or lines[0].strip() != "---":
        return [], 0
    for end in range(1, len(lines)):
        if lines[end].strip() in ("---", "..."):
            return lines[1:end], end + 1
    return [], 0  # an opening --- without a closing one is a horizontal rule, not front matter


def read_front(block: list[str]) -> tuple[dict[str, object], str | None]:
    """The front matter's keys (lower-cased), read as YAML (PyYAML's safe loader); and, when YAML
    refuses the block, why: it is then read with the small reader below (``key: value``, quoted
    strings, ``[a, b]`` and ``- item`` lists), which takes what it can."""
    if not any(line.strip() for line in block):
        return {}, None
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    try:
        data = yaml.load("\n".join(block), Loader=loader)  # noqa: S506 - a safe loader
    except yaml.YAMLError as exc:
        try:  # Cursor's own rules write `globs: *.ts,*.tsx` bare, which YAML reads as an alias
            data = yaml.load("\n".join(_bare_stars_quoted(block)), Loader=loader)  # noqa: S506
        except yaml.YAMLError:
            return _read_yaml_subset(block), _yaml_problem(exc)
    if data is None:
        return {}, None
    if not isinstance(data, dict):
        return _read_yaml_subset(block), f"YAML gave a {type(data).__name__}, not keys and values"
    return {str(key).lower(): _plain(value) for key, value in data.items()}, None


def _bare_stars_quoted(block: list[str]) -> list[str]:
    """``key: *.ts,*.tsx`` as ``key: '*.ts,*.tsx'``: a value that starts with ``*`` is a glob as
    Cursor writes it, never a YAML alias in an agent's front matter."""
    return [
        re.sub(r"^(\s*[\w-]+:\s+)(\*.*?)(\s+#.*)?\s*$", lambda m: m[1] + _single_quoted(m[2]), line) for line in block
    ]


def _single_quoted(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _yaml_problem(exc: Exception) -> str:
    """YAML's complaint in one line, with the front matter's line it points at (1 is the line after
    the opening ``---``, which is line 2 of the file)."""
    mark = getattr(exc, "problem_mark", None)
    problem = getattr(exc, "problem", None) or str(exc).split("\n")[0]
    return f"{problem} (file line {mark.line + 2})" if mark is not None else str(problem)


def _plain(value: object) -> object:
    """A YAML date or time as the ISO text the rest reads (``parse_date``); anything else as is."""
    if isinstance(value, (date, datetime)):
        return value.isoformat()
    return value


def _read_yaml_subset(lines: list[str]) -> dict[str, object]:
    data: dict[str, object] = {}
    key = None
    for line in lines:
        item = re.match(r"^\s+-\s+(.*)$", line) or re.match(r"^-\s+(.*)$", line)
        listed = data.get(key) if key is not None else None
        if item and isinstance(listed, list):
            listed.append(_scalar(item.group(1)))
            continue
        pair = re.match(r"^([A-Za-z_][\w-]*)\s*:\s*(.*)$", line)
        if not pair:
            continue
        key, raw = pair.group(1).lower(), pair.group(2).strip()
        if not raw:
            data[key] = []  # a block list may follow
        elif raw.startswith("[") and raw.endswith("]"):
            data[key] = [_scalar(part) for part in raw[1:-1].split(",") if part.strip()]
        else:
            data[key] = _scalar(raw)
    return data


def _scalar(raw: str) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] and raw[0] in "'\"":
        return raw[1:-1]
    return re.sub(r"\s+#.*$", "", raw)  # a trailing YAML comment


def parse_date(value: object) -> float | None:
    """An ISO date or datetime (naive means UTC) as epoch seconds; None when it cannot be read."""
    text = str(value).strip()
    try:
        parsed = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        try:
            parsed = datetime.combine(date.fromisoformat(text[:10]), datetime.min.time())
        except ValueError:
            return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=timezone.utc)
    return parsed.timestamp()


def front_matter(data: Mapping[str, object], fallback: str | None = None) -> FrontMatter:
    def text(key: str) -> str | None:
        value = data.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # title: 2024
        return value.strip() or None if isinstance(value, str) else None

    raw_tags: Any = data.get("tags", data.get("keywords", []))
    if isinstance(raw_tags, str):
        raw_tags = re.split(r"[,\s]+", raw_tags)
    if not isinstance(raw_tags, list):
        raw_tags = []
    # Words only: a nested list or mapping is no tag (and YAML aliases can make one huge to print).
    words = (str(t).strip() for t in raw_tags if isinstance(t, (str, int, float)) and not isinstance(t, bool))
    tags = tuple(dict.fromkeys(" ".join(t.replace(",", " ").split()) for t in words if t))  # stored comma-joined
    raw_date = text("date") or text("created")
    when = parse_date(raw_date) if raw_date else None
    return FrontMatter(
        title=text("title") or text("name"),
        date=when,
        tags=tags,
        description=text("description"),
        date_error=raw_date if raw_date and when is None else None,
        data=data,
        fallback=fallback,
    )


# -- blocks and sections -----------------------------------------------------------------------


@dataclass(frozen=True)
class Block:
    """A paragraph, a heading or an opaque block (never split); lines are 1-based in the file."""

    start: int
    end: int
    text: str
    opaque: bool = False
    heading: tuple[int, str] | None = None  # (level, title text)


class Paragraph:
    """Lines gathered into one paragraph block (0-based line indexes in, 1-based lines out)."""

    def __init__(self, found: list[Block]):
        self.found = found
        self.lines: list[str] = []
        self.start = 0

    def add(self, index: int, line: str) -> None:
        if not self.lines:
            self.start = index
        self.lines.append(line)

    def close(self) -> None:
        if self.lines:
            self.found.append(Block(self.start + 1, self.start + len(self.lines), "\n".join(self.lines)))
        self.lines = []


def parse_markup(text: str, fallback_title: str, blocks_of, max_chars: int = MAX_CHUNK_CHARS) -> Note:
    """A note from a markup without front matter, given the function that finds its blocks."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return sectioned(lines, 0, FrontMatter(), blocks_of(lines), fallback_title, max_chars)


def _blocks(lines: list[str], first_line: int) -> list[Block]:
    """A Markdown text's blocks, as CommonMark reads them: each top-level heading, fenced code
    block, paragraph, list, quote or HTML block. A fence inside a list or a quote is a block of its
    own (opaque), with the container's text before and after it around it; lines that make no
    block (link reference definitions) are kept as text. An unclosed fence runs to the end."""
    tokens = _block_parser().parse("\n".join(lines))
    nested_fences = _fences_inside(tokens)
    blocks: list[Block] = []
    covered = 0  # lines before this one (0-based) belong to a block already
    for at, token in enumerate(tokens):
        if token.level != 0 or token.nesting == -1 or not token.map:
            continue
        start, end = token.map
        blocks += _text_blocks(lines, covered, start, first_line)
        if token.type == "heading_open":
            title = " ".join(tokens[at + 1].content.split())
            heading = (int(token.tag[1:]), title) if title else None  # "##" alone heads nothing
            blocks += _text_blocks(lines, start, end, first_line, heading=heading)
        elif token.type == "fence":
            blocks += _text_blocks(lines, start, end, first_line, opaque=True)
        else:
            blocks += _around_fences(lines, start, end, first_line, nested_fences.get(at, []))
        covered = end
    return blocks + _text_blocks(lines, covered, len(lines), first_line)


@cache
def _block_parser():
    """A CommonMark parser that stops at blocks: a heading's text is its inline token's content,
    so inline parsing (emphasis, links) is work for nothing. Imported on first use."""
    from markdown_it import MarkdownIt

    parser = MarkdownIt("commonmark")
    parser.core.ruler.enableOnly(["normalize", "block"])
    return parser


def _fences_inside(tokens: list) -> dict[int, list[list[int]]]:
    """The line ranges of the fences inside each top-level list or quote, by its opening token."""
    found: dict[int, list[list[int]]] = {}
    container = -1
    for at, token in enumerate(tokens):
        if token.level == 0 and token.nesting == 1:
            container = at
        elif token.type == "fence" and token.level > 0 and token.map:
            found.setdefault(container, []).append(token.map)
    return found


def _around_fences(lines: list[str], start: int, end: int, first_line: int, fences: list[list[int]]) -> list[Block]:
    """A container's lines ``start:end`` as text blocks, with each fence inside it opaque."""
    blocks: list[Block] = []
    for fence_start, fence_end in fences:
        blocks += _text_blocks(lines, start, fence_start, first_line)
        blocks += _text_blocks(lines, fence_start, fence_end, first_line, opaque=True)
        start = fence_end
    return blocks + _text_blocks(lines, start, end, first_line)


def _text_blocks(
    lines: list[str],
    start: int,
    end: int,
    first_line: int,
    opaque: bool = False,
    heading: tuple[int, str] | None = None,
) -> list[Block]:
    """Lines ``start:end`` (0-based) as one block without their blank edges; none when all blank."""
    while start < end and not lines[start].strip():
        start += 1
    while end > start and not lines[end - 1].strip():
        end -= 1
    if start == end:
        return []
    text = "\n".join(lines[start:end])
    return [Block(first_line + start, first_line + end - 1, text, opaque, heading)]


def slug(text: str) -> str:
    return re.sub(r"[^\w]+", "-", text.lower()).strip("-") or "section"


def parse(text: str, fallback_title: str, max_chars: int = MAX_CHUNK_CHARS) -> Note:
    """Split a Markdown file's text into its sections and their chunks."""
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    block, skip = front_block(lines)
    front = front_matter(*read_front(block))
    return sectioned(lines, skip, front, _blocks(lines[skip:], skip + 1), fallback_title, max_chars)


def sectioned(
    lines: list[str],
    skip: int,
    front: FrontMatter,
    blocks: list[Block],
    fallback_title: str,
    max_chars: int = MAX_CHUNK_CHARS,
) -> Note:
    """A note from its blocks, whatever the markup: one section per level-1 or level-2 heading.

    The first level-1 heading is the file's title and opens the preamble; ``skip`` lines of front
    matter come first.
    """
    h1 = next((b.heading[1] for b in blocks if b.heading and b.heading[0] == 1), None)
    title = front.title or h1 or fallback_title
    groups: list[tuple[tuple[str, ...], list[Block]]] = [((title,), [])]
    document_heading_seen = False
    for block in blocks:
        level = block.heading
        if level and level[0] == 1 and not document_heading_seen:
            document_heading_seen = True  # the file's own title heading: it opens the preamble
            groups[-1][1].append(block)
        elif level and level[0] <= 2:
            groups.append(((title, level[1]) if level[0] == 2 else (level[1],), [block]))
        else:
            groups[-1][1].append(block)
    sections: list = []
    seen: dict = {}
    for index, (head, members) in enumerate(groups):
        # SKILL.md-style front matter describes the whole file: its description leads the preamble.
        extra = [Block(0, 0, front.description)] if index == 0 and front.description else []
        if not any(b.heading is None for b in extra + members):
            continue  # a heading with nothing under it
        anchor = slug(head[-1]) if len(head) > 1 or index else "top"
        seen[anchor] = seen.get(anchor, 0) + 1
        if seen[anchor] > 1:
            anchor = f"{anchor}-{seen[anchor]}"
        start, end = (members[0].start, members[-1].end) if members else (1, skip)
        raw = "\n".join(lines[start - 1 : end]).strip("\n") if members else ""
        body = "\n\n".join(part for part in (extra[0].text if extra else "", raw) if part)
        sections.append(Section(anchor, head, body, start, end, tuple(extra + members), max_chars))
    return Note(title, front, tuple(sections))


def _chunks(head: tuple[str, ...], members: list[Block], max_chars: int) -> list[str]:
    """Pack a section's blocks into chunks of at most ``max_chars``, each led by its heading path.

    A subheading opens a new chunk once the current one is a third full, and a heading never ends
    a chunk (it moves on with the text it introduces). A fenced block is never cut, even when it
    alone is longer than the cap: the keyword leg still sees all of it, and the vector leg its
    first ~256 tokens.
    """
    items: list[tuple[tuple[str, ...], str, bool]] = []  # (heading path, text, is a heading)
    sub: list[tuple[int, str]] = []  # headings below ## in effect: (level, text)
    for block in members:
        level = block.heading
        if level and level[0] > 2:
            sub = [s for s in sub if s[0] < level[0]] + [level]
        path = head + tuple(s[1] for s in sub)
        budget = _budget(path, max_chars)
        text = block.text
        pieces = [text] if block.opaque or len(text) <= budget else split_paragraphs(text, budget)
        items.extend((path, piece, level is not None) for piece in pieces)

    chunks: list[str] = []
    current: list[tuple[tuple[str, ...], str, bool]] = []
    for item in items:
        size = sum(len(text) + 2 for _, text, _ in current)
        budget = _budget(current[0][0] if current else item[0], max_chars)
        if current and item[2] and size >= budget // 3:
            chunks.append(_chunk(current, max_chars))
            current = []
        elif current and size + len(item[1]) > budget:
            carried: list = []
            while current and current[-1][2]:
                carried.insert(0, current.pop())
            if current:
                chunks.append(_chunk(current, max_chars))
            current = carried
        current.append(item)
    if current:
        chunks.append(_chunk(current, max_chars))
    return chunks


def _prefix(path: tuple[str, ...], max_chars: int) -> str:
    line = PATH_SEPARATOR.join(path)
    limit = int(max_chars * MAX_PATH_SHARE)
    return line if len(line) <= limit else line[: limit - 1] + "…"


def _budget(path: tuple[str, ...], max_chars: int) -> int:
    return max(200, max_chars - len(_prefix(path, max_chars)) - 1)


# What a part of a long section is about, read from the block that opens it: an rst directive's
# name (``.. py:data:: MAX_CONTENT_LENGTH``, ``.. autofunction:: url_for``, ``.. option:: --app``),
# or a definition list's term (a short line whose definition follows indented).
DIRECTIVE = re.compile(
    r"\.\.\s+(?:[\w-]+:)?(?:auto)?(?:function|method|class|data|attribute|exception|decorator|option|envvar"
    r"|confval|describe|object|property|module)::\s*(?P<name>\S[^\n]*)"
)
TERM = re.compile(r"(?P<name>[^\s.][^\n]{0,58}[^.:,;\s])\n[ \t]+\S")
MAX_PART_NAME = 60


def part_name(items: list) -> str | None:
    """What a chunk is about when it opens on a named part of its section, else None."""
    if not items or items[0][2]:  # a chunk opened by a heading is titled by it
        return None
    first = items[0][1]
    if found := DIRECTIVE.match(first):
        name = found["name"].split("(", 1)[0].split(" <", 1)[0].strip()
        return name[:MAX_PART_NAME] or None
    following = items[1][1] if len(items) > 1 else ""
    joined = first if "\n" in first else first + "\n" + following
    if (found := TERM.match(joined)) and not DIRECTIVE.match(first) and not first.startswith(("..", "-", "*", "|")):
        return found["name"]
    return None


def _chunk(items: list, max_chars: int) -> str:
    """A chunk: its heading path, and the name of the part it opens on (``Configuration Handling >
    Builtin Configuration Values > SECRET_KEY``) when that still fits, then its text."""
    body = "\n\n".join(text for _, text, _ in items)
    path = items[0][0]
    name = part_name(items)
    if name and name not in path:
        titled = _prefix(path + (name,), max_chars) + "\n" + body
        if len(titled) <= max_chars or len(_prefix(path, max_chars)) + 1 + len(body) > max_chars:
            return titled
    return _prefix(path, max_chars) + "\n" + body
