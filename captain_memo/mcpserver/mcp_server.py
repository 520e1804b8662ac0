"""The MCP server on stdio: the SDK's low-level server, answering from MemoryService (which asks the
store's warm service, or runs the call here when there is none).

Every call runs on one worker thread, so the protocol loop keeps answering (pings, cancellations,
tools/list) while a search or an embedding runs, and an engine opened here is only ever used by
one thread. stdout carries protocol only: the SDK points file descriptor 1 at
stderr while it serves, and every log line goes to stderr.

Errors, as the specification has them since 2025-11-25: an unknown tool or a malformed request is
a JSON-RPC error (one line naming what was wrong). Arguments that do not fit a tool's schema, text
that cannot be stored (NUL, too long), an id that names no memory, and a failure while doing the
work (both search legs down, a damaged database) are tool results with ``isError`` and one line
saying what was wrong or what to do, so the model reads it and corrects the call. Anything else is
logged with its traceback on stderr and answered as an internal error, one line, never the
traceback. Lines that are not JSON-RPC requests at all are answered by wire.py.
"""

from __future__ import annotations

import asyncio
import logging
import re
from concurrent.futures import ThreadPoolExecutor

import anyio
import mcp_types as types
from mcp_types.version import MODERN_PROTOCOL_VERSIONS

from captain_memo import __version__
from captain_memo.base import fields
from captain_memo.errors import CaptainMemoError, DatabaseDamagedError, InputError, NotFoundError
from captain_memo.mcpserver import render, wire
from captain_memo.mcpserver.memory_calls import MemoryService, open_warm_memo
from captain_memo.mcpserver.sdk import MCPError, Server, SessionMessage, stdio_server
from captain_memo.mcpserver.tools import TOOLS, checked_arguments, tool_named
from captain_memo.mcpserver.workspace import Workspace
from captain_memo.presentation.words import message_line as one_line
from captain_memo.requests import agent_calls, operations

log = logging.getLogger("captain_memo")
REQUEST_KEY = "captain-memo/request-key"  # hosting/relay.py puts it in a tools/call's _meta
RESOURCE_NOT_FOUND = -32002  # the MCP specification's code for a resource that does not exist
# A memory's URI names it by the id every tool takes (fields.ID_PATTERN): "12", or "t12" in the team store.
MEMORY_URI = re.compile(f"^captain-memo://memory/({fields.ID_PATTERN.strip('^$')})$")
# A client that declares roots but never answers must not hold up every first call for long.
ROOTS_TIMEOUT_S = 5.0
INSTRUCTIONS = (
    "Captain Memo is the developer's long-term memory for this repository, shared with their editor. "
    "Call recall before working on unfamiliar code or when an identifier, error or earlier decision comes "
    "up; call remember when you learn something a later session would need (what code really does, why "
    "something failed, a decision and its reason)."
)


class MemoryServer:
    """The tools and resources, routed to the service on the worker thread."""

    def __init__(self, service: MemoryService, workspace: Workspace):
        self.service = service
        self.workspace = workspace
        self._worker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="captain-memo-mcp")
        self._roots_stale = True
        self._roots_lock = anyio.Lock()
        # Each tool's text; what it does is asked of the service (service.py).
        self._texts = {
            "recall": render.recall_text,
            "remember": render.remember_text,
            "show": render.memory_text,
            "supersede": render.supersede_text,
            "forget": render.forget_text,
        }

    def build(self) -> Server:
        server = Server(
            "captain-memo",
            version=__version__,
            title="Captain Memo",
            instructions=INSTRUCTIONS,
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
            on_list_resources=self.list_resources,
            on_list_resource_templates=self.list_resource_templates,
            on_read_resource=self.read_resource,
        )
        server.add_notification_handler(
            "notifications/roots/list_changed", types.NotificationParams, self._roots_changed
        )
        return server

    async def serve_stdio(self, resume=None) -> None:
        """On this process's stdin and stdout; ``resume`` (hosting/relay.py): a session the store's
        engine held until it went away, carried on here from where it stood."""
        if resume is None:
            with wire.claimed_stdin() as stdin:
                await self.serve_lines(stdin, None)
            return
        with wire.claimed_stdin(resume.replay) as stdin, wire.claimed_stdout() as stdout:
            await self.serve_lines(stdin, wire.Withheld(stdout, resume.swallow))

    async def serve_lines(self, stdin, stdout) -> None:
        """On lines of text in and out (``stdout`` None: the SDK claims this process's stdout)."""
        server = self.build()
        replies, to_send = anyio.create_memory_object_stream[types.JSONRPCMessage](64)
        lines = wire.AnsweredLines(stdin, replies.send)
        async with stdio_server(stdin=lines, stdout=stdout) as (read_stream, write_stream):  # type: ignore[arg-type]
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_send_all, to_send, write_stream)
                await server.run(read_stream, write_stream, server.create_initialization_options())
                tasks.cancel_scope.cancel()

    def close(self) -> None:
        try:
            self._worker.submit(self.service.close).result(timeout=10)
        except Exception:
            log.exception("mcp: closing the store failed")
        self._worker.shutdown(wait=False, cancel_futures=True)

    # -- tools ----------------------------------------------------------------------------

    async def list_tools(self, ctx, params) -> types.ListToolsResult:
        return types.ListToolsResult(
            tools=[
                types.Tool(
                    name=tool.name,
                    title=tool.title,
                    description=tool.description,
                    input_schema=tool.input_schema,
                    output_schema=tool.output_schema,
                    annotations=types.ToolAnnotations(**_snake(tool.annotations)),
                )
                for tool in TOOLS.values()
            ]
        )

    async def call_tool(self, ctx, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:  # an unknown tool is a protocol error; everything after it, the model can correct
            tool = tool_named(params.name)
        except InputError as exc:
            raise MCPError(types.INVALID_PARAMS, one_line(str(exc))) from None
        try:
            args = checked_arguments(tool, params.arguments)
            await self._refresh_roots(ctx)
            client, key = client_name(ctx), _request_key(params)
            if tool.name == "remember":
                key = (
                    key or operations.new_request_key()
                )  # the name its cancellation is known by (operations.CANCELLATIONS)
            with operations.CANCELLATIONS.watching(key):
                data = await self._on_worker(lambda: self.service.call(tool.name, args, self.workspace, client, key))
            notices = [*self.workspace.take_notices(), *self.service.take_notices()]
            structured = render.structured(data, notices)
            # The text is rendered from the structured result: a client showing either loses nothing.
            content: list[types.ContentBlock] = [_text(self._texts[tool.name](structured)), *map(_text, notices)]
            return types.CallToolResult(content=content, structured_content=structured)
        except Exception as exc:
            return types.CallToolResult(content=[_text(self._failure(f"tool {tool.name}", exc))], is_error=True)

    # -- resources ------------------------------------------------------------------------

    async def list_resource_templates(self, ctx, params) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(
            resource_templates=[
                types.ResourceTemplate(
                    name="memory",
                    title="A memory by id",
                    uri_template="captain-memo://memory/{id}",
                    description=(
                        "One memory in full (Markdown): title, kind, branch, source and text. The id as recall "
                        'gives it: "12", or "t12" for a team memory.'
                    ),
                    mime_type="text/markdown",
                )
            ]
        )

    async def list_resources(self, ctx, params) -> types.ListResourcesResult:
        """A page of memories (agent_calls.recent); ``nextCursor`` names the next, until the last."""
        cursor = params.cursor if params is not None else None
        try:  # a cursor not made here is the request's fault: -32602, before any work
            if cursor is not None:
                fields.cursor_position(cursor)
            args = agent_calls.checked_call("recent", {"cursor": cursor})
        except InputError as exc:
            raise MCPError(types.INVALID_PARAMS, one_line(str(exc))) from None
        await self._refresh_roots(ctx)
        try:
            page = await self._on_worker(lambda: self.service.call("recent", args, self.workspace, client_name(ctx)))
        except Exception as exc:
            raise MCPError(types.INTERNAL_ERROR, self._failure("resources/list", exc)) from None
        return types.ListResourcesResult(
            next_cursor=page["next_cursor"],
            resources=[
                types.Resource(
                    name=f"memory {row['id']}",
                    title=row["title"],
                    uri=f"captain-memo://memory/{row['id']}",
                    description=row["kind"],
                    mime_type="text/markdown",
                )
                for row in page["resources"]
            ],
        )

    async def read_resource(self, ctx, params: types.ReadResourceRequestParams) -> types.ReadResourceResult:
        uri = str(params.uri)
        match = MEMORY_URI.match(uri)
        if match is None:
            raise MCPError(
                RESOURCE_NOT_FOUND,
                'no such resource: memories are captain-memo://memory/{id}, the id as recall gives it ("12", "t12")',
                data={"uri": uri[:200]},  # as the specification's example has it; the message does not repeat it
            )
        await self._refresh_roots(ctx)
        try:
            data = await self._on_worker(
                lambda: self.service.call("read", {"id": match[1]}, self.workspace, client_name(ctx))
            )
        except (NotFoundError, InputError) as exc:  # InputError: a team memory with no team store set
            raise MCPError(RESOURCE_NOT_FOUND, one_line(str(exc)), data={"uri": uri}) from None
        except Exception as exc:
            raise MCPError(types.INTERNAL_ERROR, self._failure("resources/read", exc)) from None
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type="text/markdown", text=render.memory_text(data))]
        )

    # -- parts ----------------------------------------------------------------------------

    async def _on_worker(self, fn):
        return await asyncio.wrap_future(self._worker.submit(fn))

    def _failure(self, what: str, exc: Exception) -> str:
        """One line for a failed call; raises MCPError for what was wrong with the arguments."""
        if isinstance(exc, MCPError):
            raise exc
        if isinstance(exc, CaptainMemoError):
            log.info("mcp: %s failed: %s", what, exc)
            return one_line(str(exc))
        from captain_memo.memo import readable_error

        error = readable_error(exc, self.service.database_path)
        if error is not None:
            log.warning("mcp: %s failed: %s", what, error)
            if isinstance(error, DatabaseDamagedError):
                self._worker.submit(self.service.drop_memo)
            return one_line(str(error))
        log.error("mcp: %s failed unexpectedly", what, exc_info=exc)
        raise MCPError(
            types.INTERNAL_ERROR,
            f"internal error in {what} ({type(exc).__name__}); the details are in the server's log (stderr)",
        ) from None

    async def _refresh_roots(self, ctx) -> None:
        """Ask the client for its roots once, and again after it says they changed."""
        async with self._roots_lock:  # a second call waits for the first one's answer
            if self._roots_stale:
                self._roots_stale = False
                await self._ask_roots(ctx.session)

    async def _ask_roots(self, session) -> None:
        capabilities = session.client_capabilities
        if capabilities is None or capabilities.roots is None or session.protocol_version in MODERN_PROTOCOL_VERSIONS:
            return  # no roots to ask for: --folder or the starting folder stands
        try:
            with anyio.fail_after(ROOTS_TIMEOUT_S):
                result = await session.send_request(types.ListRootsRequest(), types.ListRootsResult)
        except Exception as exc:
            log.warning(
                "mcp: the client's roots could not be listed (%s); working in %s",
                one_line(str(exc)),
                self.workspace.cwd,
            )
            return
        self.workspace.set_roots([str(root.uri) for root in result.roots])

    async def _roots_changed(self, ctx, params) -> None:
        self._roots_stale = True


async def _send_all(messages, write_stream) -> None:
    """The answers wire.py made for lines the SDK would drop, sent as the SDK sends its own."""
    async with messages:
        async for message in messages:
            await write_stream.send(SessionMessage(message))


def _request_key(params: types.CallToolRequestParams) -> str | None:
    """The key the relay gave this call (hosting/relay.py): the same call carried over to another
    engine, or to this process, stores its memory once."""
    meta = params.meta if isinstance(params.meta, dict) else {}
    key = meta.get(REQUEST_KEY)
    return key if isinstance(key, str) and 0 < len(key) <= 64 else None


def client_name(ctx) -> str | None:
    params = ctx.session.client_params
    info = params.client_info if params is not None else None
    return info.name if info is not None else None


def _text(text: str) -> types.TextContent:
    return types.TextContent(type="text", text=text)


def _snake(annotations: dict) -> dict:
    return {re.sub(r"(?<!^)([A-Z])", r"_\1", key).lower(): value for key, value in annotations.items()}


def serve(
    db: str | None = None,
    folder: str | None = None,
    share_worktrees: bool = True,
    resume=None,
    use_service: bool = True,
) -> int:
    """``use_service`` off (``--no-service``): every call runs in this process, on its own engine."""
    service = MemoryService(db) if use_service else MemoryService(db, open_memo=open_warm_memo)
    if resume is not None:
        service.run_here_for_a_while(resume.why)
    front = MemoryServer(service, Workspace(folder, share_worktrees=share_worktrees))
    try:
        anyio.run(front.serve_stdio, resume)
    finally:
        front.close()
    return 0
