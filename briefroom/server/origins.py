"""The served API's origin check: a request a browser sends from another origin gets 403
before any route runs (see `server/langgraph_app.py`, whose `http_app` mounts it)."""

from __future__ import annotations

import os
from typing import Any

ORIGINS_ENV = "BRIEFROOM_SERVE_ORIGINS"


class SameOriginOnly:
    """ASGI middleware: a request that carries an `Origin` (browsers add it to every
    cross-origin request that can change anything) is served only if that origin is the
    server's own or one the operator allows; others get 403 before any route runs."""

    def __init__(self, app: Any, allowed: frozenset[str] | None = None):
        self.app = app
        self.allowed = allowed if allowed is not None else frozenset(
            o.strip().rstrip("/") for o in os.environ.get(ORIGINS_ENV, "").split(",") if o.strip())

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
            origin = headers.get("origin")
            if origin is not None and not self._may(origin, headers.get("host", "")):
                await _refuse_origin(send, origin)
                return
        await self.app(scope, receive, send)

    def _may(self, origin: str, host: str) -> bool:
        own = origin.split("://", 1)[-1] == host  # the server's own pages (/docs)
        return own or origin.rstrip("/") in self.allowed


async def _refuse_origin(send: Any, origin: str) -> None:
    import json

    body = json.dumps({"detail": f"requests from origin {origin[:100]} are refused (the server's operator "
                                 f"allows origins with {ORIGINS_ENV})"}).encode()
    await send({"type": "http.response.start", "status": 403,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]})
    await send({"type": "http.response.body", "body": body})


def _http_app() -> Any:
    # Starlette comes with the LangGraph API server; imported here, as only the server needs it.
    from starlette.applications import Starlette
    from starlette.middleware import Middleware

    return Starlette(middleware=[Middleware(SameOriginOnly)])
