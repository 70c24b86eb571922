"""The workbench on a port: the standard library's threading HTTP server around
`Workbench.handle` (no web framework: the page is a few files, and each request is small).

A request per thread, so a live view (Server-Sent Events, held open) does not hold up
the page's other requests. The server binds where it is told (127.0.0.1 by default) and
answers only to that address (`guard.Origin`); headers, bodies and paths that do not
parse are answered 400 by the server itself, never a crash.
"""

from __future__ import annotations

import sys
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from briefroom.workbench.api import Request, Response, Workbench, error
from briefroom.workbench.guard import MAX_BODY_BYTES

SECURITY_HEADERS = {"X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
                    "Cross-Origin-Resource-Policy": "same-origin", "X-Frame-Options": "SAMEORIGIN"}


class _Handler(BaseHTTPRequestHandler):
    server_version = "briefroom-workbench"
    sys_version = ""
    protocol_version = "HTTP/1.1"
    bench: Workbench  # set on the subclass `make_server` builds
    # A request line that does not parse is still answered with a status line (not as HTTP/0.9).
    default_request_version = "HTTP/1.0"

    def send_error(self, code: int, message: str | None = None, explain: str | None = None) -> None:
        """The standard library's own refusals (a request line or headers that do not
        parse, a URI too long) as the workbench's: one JSON line, and the connection closed."""
        self.close_connection = True
        self._send(error(code, message or HTTPStatus(code).phrase))

    def do_GET(self) -> None:  # noqa: N802 - the standard library's names
        if self.headers.get("Content-Length") not in (None, "0"):
            self.close_connection = True  # a body we do not read must not be taken for the next request
        self._serve(b"")

    def do_POST(self) -> None:  # noqa: N802
        try:
            length = int(self.headers.get("Content-Length") or 0)
        except ValueError:
            self._send(error(400, "Content-Length is not a number"))
            return
        if length < 0 or length > MAX_BODY_BYTES:
            self._send(error(413, f"the request body is {length:,} bytes; at most {MAX_BODY_BYTES:,}"))
            self.close_connection = True  # its body is left unread
            return
        self._serve(self.rfile.read(length))

    def do_PUT(self) -> None:  # noqa: N802
        self.close_connection = True
        self._serve(b"")

    do_DELETE = do_PATCH = do_OPTIONS = do_PUT  # refused by the router with one line (405)

    def _serve(self, body: bytes) -> None:
        url = urlsplit(self.path)
        request = Request(self.command, url.path, dict(parse_qsl(url.query)),
                          {k.lower(): v for k, v in self.headers.items()}, body)
        self._send(self.bench.handle(request))

    def _send(self, response: Response) -> None:
        self.send_response(response.status)
        self.send_header("Content-Type", response.content_type)
        for name, value in {**SECURITY_HEADERS, **response.headers}.items():
            self.send_header(name, value)
        if response.stream is None:
            self.send_header("Content-Length", str(len(response.body)))
            self.end_headers()
            self.wfile.write(response.body)
            return
        self.send_header("Connection", "close")  # the stream ends when the connection does
        self.end_headers()
        self.close_connection = True
        response.stream(self._write)

    def _write(self, data: bytes) -> bool:
        try:
            self.wfile.write(data)
            self.wfile.flush()
            return True
        except (BrokenPipeError, ConnectionResetError):  # the page was closed
            return False

    def log_message(self, format: str, *args: object) -> None:  # noqa: A002 - the standard library's name
        if self.bench.verbose:
            sys.stderr.write(f"{self.address_string()} {format % args}\n")


class WorkbenchServer(ThreadingHTTPServer):
    daemon_threads = True  # open live views do not keep the process alive at Ctrl-C

    def handle_error(self, request: object, client_address: object) -> None:
        # A request that broke in the handler (a client gone mid-write): one line, not a traceback.
        exc = sys.exc_info()[1]
        sys.stderr.write(f"workbench: a request from {client_address} ended: {type(exc).__name__}: {exc}\n")


def make_server(bench: Workbench, host: str, port: int) -> WorkbenchServer:
    """A server on `host:port` (port 0: a free one) that answers as `bench` does; the
    bench's origin is set to the address actually bound."""
    handler = type("Handler", (_Handler,), {"bench": bench})
    server = WorkbenchServer((host, port), handler)
    bench.origin = type(bench.origin)(host, server.server_address[1])
    return server


def serve_in_thread(server: WorkbenchServer) -> threading.Thread:
    thread = threading.Thread(target=server.serve_forever, name="workbench", daemon=True)
    thread.start()
    return thread
