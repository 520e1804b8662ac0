"""When a path names what a question is about.

A commit touches ``capture`` when one of its paths is named by it: the path itself
(``src/pkg/capture.py``, or its end ``pkg/capture.py``), the file name (``capture.py``), the stem
with or without a leading underscore (``capture`` names ``_pytest/capture.py``), or the dotted module
name (``pkg.capture``; a package's ``__init__.py`` is named by its folder). Plain functions over
strings: the store looks rows up by ``stem_of`` and keeps those ``names_path`` accepts.
"""

from __future__ import annotations

from pathlib import PurePosixPath

# File name endings that make a dotted token a file name rather than a module name.
FILE_SUFFIXES = frozenset(
    "py pyi pyx rs lua vim js mjs ts tsx jsx go c h cc cpp hpp java kt rb php sh sql md rst txt toml yaml yml "
    "json cfg ini html css".split()
)
# Source code: a plain name ("config") names these before a doc or a settings file of that name.
CODE_SUFFIXES = frozenset("py pyi pyx rs lua vim js mjs ts tsx jsx go c h cc cpp hpp java kt rb php sh".split())
QUOTES = "`'\""


def clean(token: str) -> str:
    return token.strip(QUOTES).rstrip("/").removeprefix("./")


def _bare(name: str) -> str:
    return name.casefold().lstrip("_")


def module_parts(path: str) -> list[str]:
    """``src/pkg/_capture.py`` -> [src, pkg, capture]; a package's ``__init__`` is its folder."""
    parts = list(PurePosixPath(path).with_suffix("").parts)
    if len(parts) > 1 and parts[-1] == "__init__":
        parts.pop()
    return [_bare(part) for part in parts]


def stem_of(path: str) -> str:
    """What the store indexes a path by: its module's last part, case-folded, without leading '_'."""
    parts = module_parts(path)
    return parts[-1] if parts else ""


def _is_file_name(token: str) -> bool:
    return "." in token and token.rsplit(".", 1)[1].casefold() in FILE_SUFFIXES


def lookup_stem(token: str) -> str:
    """The stem of the paths ``token`` may name (the key the store looks rows up by)."""
    token = clean(token)
    if "/" in token or _is_file_name(token):
        return stem_of(token)
    return _bare(token.rsplit(".", 1)[-1])


def names_path(token: str, path: str) -> bool:
    """Whether ``token`` (a path, a file name, a stem or a dotted module name) names ``path``."""
    token = clean(token)
    if not token or not path:
        return False
    if "/" in token:
        return path == token or path.endswith("/" + token)
    if _is_file_name(token) and PurePosixPath(path).name.casefold() == token.casefold():
        return True
    wanted = [_bare(part) for part in token.split(".")]
    return module_parts(path)[-len(wanted) :] == wanted if all(wanted) else False


def file_question(path: str) -> str:
    """The change question about one file, by its path inside the repository (as commits name it)."""
    return f"latest change to {path}"


def is_source_path(path: str) -> bool:
    return PurePosixPath(path).suffix.lstrip(".").casefold() in CODE_SUFFIXES


def prefers_source(token: str) -> bool:
    """A bare name or a dotted module name means a module: source files first. A path or a file
    name means exactly that file."""
    token = clean(token)
    return "/" not in token and not _is_file_name(token)


def is_code_form(token: str) -> bool:
    """A path, a file name or a dotted name: a form a message names a module by on purpose."""
    token = clean(token)
    return "/" in token or "." in token
