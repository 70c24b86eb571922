"""An OpenAI-compatible endpoint double: a real HTTP server on loopback that answers
`/v1/chat/completions` with the deterministic model's reply after a fixed latency.

It exists for measurements and tests of what only shows over HTTP with a slow model:
searchers running at the same time, many jobs at once, timeouts. Replies are those of
`DeterministicChatModel` (schema-valid, built from the prompt's own material), so a run
against the double writes the same report as a run with `--model test`; only the wall
time differs. Requests are served on their own threads, as a real endpoint would.

    with EndpointDouble(latency=1.0) as double:
        settings = Settings(model="double", base_url=double.base_url, structured="json_object_schema")
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from langchain_core.messages import AIMessage, convert_to_messages

from briefroom.models.deterministic import DeterministicChatModel


class EndpointDouble:
    def __init__(self, latency: float = 1.0):
        self.latency = latency
        self.calls = 0
        self.max_in_flight = 0  # most requests served at the same moment
        self._in_flight = 0
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        if self._server is None:
            raise RuntimeError("endpoint double not started")
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def start(self) -> "EndpointDouble":
        double = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's naming)
                if not self.path.endswith("/chat/completions"):
                    self.send_error(404)
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
                completion = double.answer(body)
                if body.get("stream"):
                    self._send_stream(completion, bool((body.get("stream_options") or {}).get("include_usage")))
                    return
                payload = json.dumps(completion).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def _send_stream(self, completion: dict[str, Any], usage: bool) -> None:
                """The same completion as server-sent events, as a streaming endpoint sends it."""
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in _chunks(completion, usage):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, format: str, *args: Any) -> None:
                return None

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        self._thread.start()
        return self

    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """One completion: the deterministic reply, sent after `latency` seconds."""
        with self._lock:
            self.calls += 1
            self._in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self._in_flight)
        try:
            kwargs = {key: body[key] for key in ("tools", "response_format") if body.get(key)}
            result = DeterministicChatModel()._generate(convert_to_messages(body["messages"]), **kwargs)
            reply = result.generations[0].message
            time.sleep(self.latency)
        finally:
            with self._lock:
                self._in_flight -= 1
        return _completion(body.get("model", "double"), reply)

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> "EndpointDouble":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


def _completion(model: str, reply: Any) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": str(reply.content)}
    if isinstance(reply, AIMessage) and reply.tool_calls:
        message["content"] = None
        message["tool_calls"] = [{"id": call["id"] or f"call_{n}", "type": "function",
                                  "function": {"name": call["name"], "arguments": json.dumps(call["args"])}}
                                 for n, call in enumerate(reply.tool_calls)]
    return {"id": "chatcmpl-double", "object": "chat.completion", "created": 0, "model": model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
            "usage": {"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0}}


def _chunks(completion: dict[str, Any], usage: bool) -> list[dict[str, Any]]:
    """A completion cut into the chunks of a stream: the message, the finish, the usage."""
    choice = completion["choices"][0]
    message = choice["message"]
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    if message.get("tool_calls"):
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
    head = {k: completion[k] for k in ("id", "created", "model")} | {"object": "chat.completion.chunk"}
    chunks = [{**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
              {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": choice["finish_reason"]}]}]
    if usage:
        chunks.append({**head, "choices": [], "usage": completion["usage"]})
    return chunks
