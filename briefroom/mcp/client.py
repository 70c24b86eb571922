"""One connection to one MCP server, usable from the run's worker threads.

The SDK is asynchronous and a session must be opened and closed in the same task, so
each server gets an event loop in a thread of its own: one task holds the `Client`
open for the whole run, and every tool call is a coroutine submitted to that loop
from whichever thread `run_tool` runs it in. What goes wrong is said with a kind:

- "timeout": no answer within the call's time (the call is cancelled on the server);
- "dead": the server closed the connection or its process exited; it is reported
  once, and later calls fail at once with the same reason instead of waiting again;
- "protocol": the server answered, but with an error or something that is not MCP.

A stdio server's stderr goes to a temporary file, not to the terminal: the tail of it
says why a server died, and passes through redaction with the error like any result.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Literal

from briefroom.errors import ConfigError
from briefroom.mcp.config import ServerConfig, resolve_command, resolve_cwd

Kind = Literal["timeout", "dead", "protocol"]
# A call waits this much longer than its own timeout for the loop to hand the
# cancellation back; past it the call is given up even if the loop is stuck.
CALL_GRACE_S = 5.0
# Starting a process and listing its tools; a server slower than this is not started.
DEFAULT_START_TIMEOUT_S = 30.0
# Shutting down: the SDK closes stdin, waits, then kills the process tree (about 6 s at
# worst); a loop that does not finish by then is left to die with the process.
CLOSE_TIMEOUT_S = 10.0
STDERR_TAIL_CHARS = 600
TOOL_LIST_PAGES = 20  # a server that pages forever cannot hang the start


class McpCallError(Exception):
    def __init__(self, kind: Kind, message: str):
        super().__init__(message)
        self.kind = kind


@dataclass(frozen=True)
class RemoteTool:
    """A tool as the server lists it."""

    name: str
    description: str
    input_schema: dict[str, Any]


class McpConnection:
    def __init__(self, name: str, server: ServerConfig, config_path: Path):
        self.name = name
        self.server = server
        self.config_path = config_path
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, name=f"mcp-{name}", daemon=True)
        self._stderr: IO[str] | None = None
        self._client: Any = None
        self._stop: asyncio.Event | None = None
        self._holder: concurrent.futures.Future[None] | None = None
        self._dead: str | None = None  # why the server cannot be used any more
        self._http: Any = None  # a URL server's HTTP client, which the transport does not close

    # --- start and stop --------------------------------------------------------------
    def start(self, timeout_s: float = DEFAULT_START_TIMEOUT_S) -> list[RemoteTool]:
        """Start (or reach) the server and list its tools; ConfigError when it cannot."""
        self._thread.start()
        ready: concurrent.futures.Future[list[RemoteTool]] = concurrent.futures.Future()
        self._holder = asyncio.run_coroutine_threadsafe(self._hold(ready), self._loop)
        try:
            return ready.result(timeout=timeout_s)
        except concurrent.futures.TimeoutError:
            self.close()
            raise ConfigError(f"MCP server {self.name!r} did not start within {timeout_s:g}s"
                              f"{self._stderr_note()}") from None
        except ConfigError:
            self.close()
            raise
        except Exception as exc:
            note = self._stderr_note()
            self.close()
            raise ConfigError(f"MCP server {self.name!r} did not start: {_describe(exc)}{note}") from None

    async def _hold(self, ready: concurrent.futures.Future[list[RemoteTool]]) -> None:
        """Open the client, list the tools, and keep the session until `close`."""
        from mcp import Client

        self._stop = asyncio.Event()
        try:
            async with Client(self._transport(), cache=None) as client:
                tools = await _list_tools(client)
                self._client = client
                ready.set_result(tools)
                await self._stop.wait()
        except BaseException as exc:  # a failed start is the caller's error; a later one, a dead server
            if not ready.done():
                ready.set_exception(exc)
            self._dead = self._dead or f"the connection ended ({_describe(exc)})"
            if not isinstance(exc, Exception):
                raise
        finally:
            self._dead = self._dead or "the connection was closed"
            if self._http is not None:
                await self._http.aclose()

    def _transport(self) -> Any:
        from mcp.client.stdio import StdioServerParameters, stdio_client
        from mcp.client.streamable_http import streamable_http_client

        if self.server.command is None:
            import httpx2

            # trust_env off: a proxy from the environment must not sit between a run and
            # a server on this machine (and see its questions). Timeouts: the SDK's defaults.
            self._http = httpx2.AsyncClient(timeout=httpx2.Timeout(30.0, read=300.0), trust_env=False)
            return streamable_http_client(str(self.server.url), http_client=self._http)
        self._stderr = tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace")
        params = StdioServerParameters(command=resolve_command(self.server, self.config_path),
                                       args=list(self.server.args), env=dict(self.server.env) or None,
                                       cwd=resolve_cwd(self.server, self.config_path))
        return stdio_client(params, errlog=self._stderr)

    def close(self) -> None:
        """Stop the session (and a stdio server's process); bounded, never raises."""
        if self._stop is not None and self._loop.is_running():
            self._loop.call_soon_threadsafe(self._stop.set)
        if self._holder is not None:
            try:
                self._holder.result(timeout=CLOSE_TIMEOUT_S)
            except BaseException:  # noqa: BLE001 (a server that failed is already reported)
                pass
        if self._loop.is_running():
            self._loop.call_soon_threadsafe(self._loop.stop)
        if self._thread.is_alive():
            self._thread.join(timeout=CLOSE_TIMEOUT_S)
        if not self._thread.is_alive() and not self._loop.is_closed():
            self._loop.close()
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None
        self._dead = self._dead or "the connection was closed"

    # --- calls -------------------------------------------------------------------------
    def call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        """The server's CallToolResult for one call, or McpCallError."""
        if self._dead is not None or self._client is None:
            raise McpCallError("dead", f"MCP server {self.name!r} is not running: {self._dead or 'not started'}")
        future = asyncio.run_coroutine_threadsafe(self._call(tool, arguments, timeout_s), self._loop)
        try:
            return future.result(timeout=timeout_s + CALL_GRACE_S)
        except concurrent.futures.TimeoutError:
            future.cancel()
            raise McpCallError("timeout", f"MCP server {self.name!r} did not answer {tool} within "
                                          f"{timeout_s:g}s") from None
        except concurrent.futures.CancelledError:
            raise McpCallError("dead", f"MCP server {self.name!r} is not running: {self._dead}") from None

    async def _call(self, tool: str, arguments: dict[str, Any], timeout_s: float) -> Any:
        from mcp import MCPError
        from mcp_types import CONNECTION_CLOSED, REQUEST_TIMEOUT
        from pydantic import ValidationError

        try:
            return await asyncio.wait_for(self._client.call_tool(tool, arguments, read_timeout_seconds=timeout_s),
                                          timeout_s)
        except asyncio.TimeoutError:
            raise McpCallError("timeout", f"MCP server {self.name!r} did not answer {tool} within "
                                          f"{timeout_s:g}s") from None
        except MCPError as exc:
            if exc.error.code == REQUEST_TIMEOUT:
                raise McpCallError("timeout", f"MCP server {self.name!r} did not answer {tool} within "
                                              f"{timeout_s:g}s") from None
            if exc.error.code == CONNECTION_CLOSED:
                self._dead = f"it closed the connection during a call of {tool}{self._stderr_note()}"
                raise McpCallError("dead", f"MCP server {self.name!r} died: {self._dead}") from None
            raise McpCallError("protocol", f"MCP server {self.name!r} refused {tool} (error {exc.error.code}): "
                                           f"{exc.error.message[:300]}") from None
        except ValidationError as exc:  # an answer that is not a CallToolResult
            raise McpCallError("protocol", f"MCP server {self.name!r} answered {tool} with something that is "
                                           f"not an MCP result ({exc.error_count()} problem(s))") from None
        except (OSError, EOFError) as exc:  # a transport that broke under the call
            self._dead = f"its connection broke ({_describe(exc)}){self._stderr_note()}"
            raise McpCallError("dead", f"MCP server {self.name!r} died: {self._dead}") from None

    def _stderr_note(self) -> str:
        """The end of a stdio server's stderr, for an error that says why it stopped."""
        if self._stderr is None:
            return ""
        try:
            self._stderr.flush()
            fd = self._stderr.fileno()
            size = os.fstat(fd).st_size
            tail = os.pread(fd, STDERR_TAIL_CHARS * 4, max(0, size - STDERR_TAIL_CHARS * 4))
        except (OSError, ValueError):
            return ""
        text = " ".join(tail.decode("utf-8", "replace").split())[-STDERR_TAIL_CHARS:]
        return f"; its stderr ends: {text}" if text else ""


async def _list_tools(client: Any) -> list[RemoteTool]:
    tools: list[RemoteTool] = []
    cursor: str | None = None
    for _ in range(TOOL_LIST_PAGES):
        page = await client.list_tools(cursor=cursor)
        tools += [RemoteTool(t.name, t.description or "", dict(t.input_schema)) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            break
    return tools


def _describe(exc: BaseException) -> str:
    """One line for an exception, looking inside the task groups anyio wraps errors in."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = " ".join(str(exc).split())[:300]
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
