"""What comes in on stdin, line by line, before the SDK reads it: every request gets an answer.

The SDK's stdio transport drops a line it cannot read as a JSON-RPC message, so its sender waits
for a reply until it gives up: a request holding an escaped lone surrogate ("\\ud800", which is
JSON but not Unicode text), a request without a method, a line that is not JSON. Here such a line
is answered as JSON-RPC asks (parse error, invalid request, invalid params; a tool call, as a tool
result with isError the model can read), and the rest pass through untouched.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import contextmanager
from io import BufferedReader, RawIOBase, TextIOWrapper
from typing import Any, BinaryIO

import anyio
import mcp_types as types

log = logging.getLogger("captain_memo")
Reply = Callable[[types.JSONRPCMessage], Awaitable[None]]


def is_message(line: str) -> bool:
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValueError:  # pydantic's ValidationError is a ValueError
        return False
    return True


def answer_to(line: str) -> types.JSONRPCMessage | None:
    """The reply a line that is not a JSON-RPC message deserves; None for one that asks for none
    (a broken notification, a response to nothing)."""
    try:
        message = json.loads(line)
    except ValueError:
        return _error(None, types.PARSE_ERROR, "parse error: the line is not JSON")
    if not isinstance(message, dict):
        return _error(None, types.INVALID_REQUEST, "invalid request: a message is a JSON object")
    request_id = message.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, (str, int)):
        if "method" in message or "result" in message or "error" in message:
            return None  # a notification or a response: JSON-RPC answers neither
        return _error(None, types.INVALID_REQUEST, "invalid request: no id and no method")
    if "method" not in message and ("result" in message or "error" in message):
        return None
    surrogate = lone_surrogate(message)
    if surrogate is not None:
        where, position = surrogate
        why = (
            f"{where} holds an unpaired UTF-16 surrogate at character {position}, which is not text; "
            "send it as valid Unicode"
        )
        if message.get("method") == "tools/call":
            result = types.CallToolResult(content=[types.TextContent(type="text", text=why)], is_error=True)
            return types.JSONRPCResponse(
                jsonrpc="2.0", id=request_id, result=result.model_dump(by_alias=True, exclude_unset=True)
            )
        return _error(request_id, types.INVALID_PARAMS, f"invalid params: {why}")
    return _error(request_id, types.INVALID_REQUEST, f"invalid request: {_what_is_wrong(message)}")


def _what_is_wrong(message: dict) -> str:
    if message.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    if not isinstance(message.get("method"), str):
        return "a request needs a method (a string)"
    if "params" in message and not isinstance(message["params"], dict):
        return "params must be an object"
    return "not a JSON-RPC request"


def lone_surrogate(value: Any, where: str = "") -> tuple[str, int] | None:
    """Where the first unpaired surrogate is: the argument's name (or the JSON path) and the
    character's position in its string; None when there is none."""
    if isinstance(value, str):
        position = next((i for i, ch in enumerate(value) if "\ud800" <= ch <= "\udfff"), None)
        return None if position is None else (where or "the message", position)
    if isinstance(value, dict):
        if where == "" and value.get("method") == "tools/call" and isinstance(value.get("params"), dict):
            found = _in_arguments(value["params"])
            if found is not None:
                return found
        items: Any = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        return None
    for key, item in items:
        name = f"{where}.{key}" if where else str(key)
        found = lone_surrogate(key, f"a key in {where or 'the message'}") if isinstance(key, str) else None
        found = found or lone_surrogate(item, name)
        if found is not None:
            return found
    return None


def _in_arguments(params: dict) -> tuple[str, int] | None:
    """In a tool call, the argument is named as the tool's error messages name it (``recall: query``)."""
    tool, arguments = params.get("name"), params.get("arguments")
    if not isinstance(tool, str) or lone_surrogate(tool) is not None or not isinstance(arguments, dict):
        return None
    for name, value in arguments.items():
        if not isinstance(name, str) or lone_surrogate(name) is not None:
            continue
        found = lone_surrogate(value, f"{tool[:60]}: {name[:60]}")
        if found is not None:
            return found
    return None


def _error(request_id, code: int, message: str) -> types.JSONRPCError:
    return types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


class AnsweredLines:
    """The lines of ``lines`` that are JSON-RPC messages; every other one is answered through
    ``reply`` (and logged, without its content) and not passed on."""

    def __init__(self, lines: AsyncIterable[str], reply: Reply):
        self.lines = lines
        self.reply = reply

    def __aiter__(self) -> AsyncIterator[str]:
        return self._checked()

    async def _checked(self) -> AsyncIterator[str]:
        async for line in self.lines:
            if not line.strip():
                continue
            if is_message(line):
                yield line
                continue
            answer = answer_to(line)
            log.warning("mcp: a line of %d characters is not a JSON-RPC message (%s)", len(line), _said(answer))
            if answer is not None:
                await self.reply(answer)


def _said(answer: types.JSONRPCMessage | None) -> str:
    if isinstance(answer, types.JSONRPCError):
        return f"answered {answer.error.code}: {answer.error.message}"
    return "answered with a tool error" if answer is not None else "nothing to answer"


@contextmanager
def claimed_stdin(prefix: bytes = b""):
    """stdin's lines as UTF-8 text, read from a private copy of file descriptor 0 while fd 0 itself
    points at the null device, so nothing the server starts can read the wire. ``prefix``: bytes
    read before (by the relay, hosting/relay.py) that come first."""
    private = os.dup(0)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    try:
        raw: BinaryIO = os.fdopen(private, "rb", closefd=False)
        if prefix:
            raw = BufferedReader(_Prefixed(prefix, private))
        yield anyio.wrap_file(TextIOWrapper(raw, encoding="utf-8", errors="replace"))
    finally:
        # The copy stays open: a worker thread may still be blocked reading it.
        os.dup2(private, 0)


class _Prefixed(RawIOBase):
    """``prefix``, then what file descriptor ``fd`` gives."""

    def __init__(self, prefix: bytes, fd: int):
        self.prefix, self.fd = prefix, fd

    def readable(self) -> bool:
        return True

    def readinto(self, buffer) -> int:
        if self.prefix:
            size = min(len(buffer), len(self.prefix))
            buffer[:size], self.prefix = self.prefix[:size], self.prefix[size:]
            return size
        data = os.read(self.fd, len(buffer))
        buffer[: len(data)] = data
        return len(data)


class Withheld:
    """stdout for the SDK's writer, less the answer to one request id (``swallow``): the answer
    to an ``initialize`` replayed to carry a session over, which the agent had already."""

    def __init__(self, out, swallow: str | None):
        self.out, self.swallow = out, swallow

    async def write(self, text: str) -> None:
        if self.swallow is not None:
            try:
                message = json.loads(text)
            except ValueError:
                message = None
            if isinstance(message, dict) and "method" not in message and json.dumps(message.get("id")) == self.swallow:
                self.swallow = None
                return
        await self.out.write(text)

    async def flush(self) -> None:
        await self.out.flush()


@contextmanager
def claimed_stdout():
    """stdout as UTF-8 text, written to a private copy of file descriptor 1 while fd 1 points at
    stderr, so stray output of anything the server starts misses the wire."""
    private = os.dup(1)
    os.dup2(2, 1)
    try:
        raw = os.fdopen(private, "wb", closefd=False)
        yield anyio.wrap_file(TextIOWrapper(raw, encoding="utf-8", write_through=True))
    finally:
        os.dup2(private, 1)
