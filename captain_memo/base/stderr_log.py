"""Library log lines on the command line's stderr: ``captain-memo: ...``, one line each.

Set up only when a command does its work in this process: importing logging is ~8 ms, about a
third of what a warm `recall` imports of its own (`python -X importtime`).
"""

from __future__ import annotations

import logging
import sys

from captain_memo.base.terminal import one_line


class OneLineFormatter(logging.Formatter):
    """A log record is one line, whatever file name or server answer it quotes."""

    def format(self, record: logging.LogRecord) -> str:
        return one_line(super().format(record))


def configure(verbose: bool = False) -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(OneLineFormatter("captain-memo: %(message)s"))
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, handlers=[handler])
