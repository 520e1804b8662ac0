"""A plain command line read without argparse, for the commands a serving engine answers.

Importing argparse and building one command's parser cost a warm `recall` ~9 ms of CPU, most of
what the interpreter's own start costs (its help formatter imports shutil, bz2 and lzma, its messages ask
gettext for a translation each; doc/benchmarks.md section 10). Here a command's ``register``
declares its options to a recorder instead, and a command line made of exactly those options and
one run of positionals is read from it. Anything else (help, a version, an abbreviation, ``--``,
a value argparse would refuse, an option this reader does not know) returns None, and argparse,
built from the same ``register``, reads it: its help and its errors stay the only ones.
"""

from __future__ import annotations

import sys
from types import SimpleNamespace

# What the reader takes from add_argument; an argument declared with anything else (an action it
# does not know, nargs "?", a group) makes its command argparse's alone.
KNOWN = {"action", "type", "default", "choices", "nargs", "help", "metavar", "dest", "required", "version"}
NO_VALUE = {"store_true": True, "store_false": False}


class NotPlain(Exception):
    """The command line is not one this reader may read: argparse reads it."""


class Commands(dict):
    """As argparse's subparsers: each command's arguments, as its ``register`` declares them."""

    def add_parser(self, name: str, **_described) -> Arguments:
        self[name] = Arguments()
        return self[name]


class Arguments:
    """One parser's arguments, as its ``register`` declares them to argparse."""

    def __init__(self) -> None:
        self.options: dict[str, dict] = {}  # option string -> its argument
        self.positionals: list[dict] = []
        self.defaults: dict = {}

    def add_argument(self, *names: str, **spec) -> None:
        if not names or set(spec) - KNOWN or spec.get("nargs") not in (None, "+", "*"):
            raise NotPlain()
        action = spec.get("action", "store")
        if action in ("version", "help"):  # handled by argparse when given; no attribute otherwise
            spec = {"action": action}
        elif action != "store" and action not in NO_VALUE:
            raise NotPlain()
        if names[0].startswith("-"):
            if "nargs" in spec:  # an option that takes several values
                raise NotPlain()
            long = next((n for n in names if n.startswith("--")), names[0])
            self.options.update(dict.fromkeys(names, {"dest": long.lstrip("-").replace("-", "_"), **spec}))
        elif spec.get("nargs") == "*" and "default" in spec:
            raise NotPlain()  # argparse's rules for it are its own
        else:
            self.positionals.append({"dest": names[0], **spec})

    def set_defaults(self, **values) -> None:
        self.defaults.update(values)

    def values(self) -> dict:
        """Every argument's default, as argparse sets it before reading the line."""
        found = {}
        for arg in self.options.values():
            action = arg.get("action", "store")
            if action in NO_VALUE:
                found[arg["dest"]] = arg.get("default", not NO_VALUE[action])
            elif action == "store":
                default = arg.get("default")
                found[arg["dest"]] = _typed(arg, default) if isinstance(default, str) else default
        for arg in self.positionals:  # one that takes none is an empty list
            found[arg["dest"]] = [] if arg.get("nargs") == "*" else None
        return {**found, **self.defaults}

    def read(self, tokens: list[str], found: dict, until_command: bool = False) -> list[str]:
        """Read ``tokens`` into ``found``; the tokens from the first positional on when
        ``until_command`` (the top level: the command and its own arguments follow)."""
        positionals: list[str] = []
        ended = False  # a run of positionals ended: argparse leaves a second one unread
        i = 0
        while i < len(tokens):
            token = tokens[i]
            if not token.startswith("-"):
                if until_command:
                    return tokens[i:]
                if ended:
                    raise NotPlain()
                positionals.append(token)
                i += 1
                continue
            ended = bool(positionals)
            name, equals, value = token.partition("=") if token.startswith("--") else (token, "", "")
            arg = self.options.get(name)
            if arg is None or arg.get("action", "store") not in ("store", *NO_VALUE):
                raise NotPlain()
            if arg.get("action", "store") in NO_VALUE:
                if equals:
                    raise NotPlain()
                found[arg["dest"]] = NO_VALUE[arg["action"]]
                i += 1
                continue
            if not equals:
                if i + 1 == len(tokens) or tokens[i + 1].startswith("-"):
                    raise NotPlain()
                i, value = i + 1, tokens[i + 1]
            found[arg["dest"]] = _typed(arg, value)
            i += 1
        if until_command:
            raise NotPlain()
        self._place(positionals, found)
        return []

    def _place(self, values: list[str], found: dict) -> None:
        """The positionals' values, as argparse gives them to a single positional argument."""
        if len(self.positionals) > 1 or (not self.positionals and values):
            raise NotPlain()
        if any(arg.get("required") and found.get(arg["dest"]) is None for arg in self.options.values()):
            raise NotPlain()
        if not self.positionals:
            return
        arg = self.positionals[0]
        nargs = arg.get("nargs")
        if (nargs is None and len(values) != 1) or (nargs == "+" and not values):
            raise NotPlain()
        if nargs == "*" and not values:
            return
        typed = [_typed(arg, v) for v in values]
        found[arg["dest"]] = typed[0] if nargs is None else typed


def _typed(arg: dict, value: str):
    """``value`` converted and checked as argparse would; NotPlain where argparse would refuse it."""
    try:
        typed = arg["type"](value) if "type" in arg else value
    except (TypeError, ValueError):
        raise NotPlain() from None
    if "choices" in arg and typed not in arg["choices"]:
        raise NotPlain()
    return typed


def parsed(argv: list[str], declare_top, commands: dict) -> SimpleNamespace | None:
    """The arguments of ``argv`` when it is a plain line for one of ``commands`` (name -> the
    module whose ``register`` declares it), else None. ``declare_top`` declares the options
    before the command."""
    try:
        top = Arguments()
        declare_top(top)
        found = top.values()
        rest = top.read(argv, found, until_command=True)
        if rest[0] not in commands:
            return None
        declared = Commands()
        __import__(commands[rest[0]])  # as importlib.import_module, without importlib's warnings
        sys.modules[commands[rest[0]]].register(declared)
        command = declared[rest[0]]
        if "run" not in command.defaults:
            return None
        found.update(command=rest[0], **command.values())
        command.read(rest[1:], found)
    except NotPlain:
        return None
    return SimpleNamespace(**found)
