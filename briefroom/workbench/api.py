"""The workbench's requests and what answers them, apart from any socket: `Workbench.handle`
takes a `Request` and gives a `Response` (a live view's is a stream), so each refusal is
tested without a server. `http.py` puts it on a port.

Every request passes `guard.check_request` first; every handler's bad input is a
`Refused` (4xx and one line), a `BriefroomError` is a 400 with its own line, and anything
else is a 500 with one line: nothing a browser sends ends the server.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from briefroom.config import Settings
from briefroom.errors import BriefroomError
from briefroom.protocol.redaction import redact_text
from briefroom.review import ReviewError, ReviewOptions
from briefroom.run import ResearchRequest, default_run_dir, new_run
from briefroom.runlog import load_events
from briefroom.runpage import CHECK_SCRIPT, render_page
from briefroom.workbench import panels
from briefroom.workbench.guard import Origin, Refused, check_request, inside, json_body, run_dir
from briefroom.workbench.live import Busy, Runner
from briefroom.workbench.tail import LogTail

STATIC = Path(__file__).with_name("static")
_ASSETS = {"/": ("index.html", "text/html; charset=utf-8"), "/static/app.js": ("app.js", "text/javascript"),
           "/static/app.css": ("app.css", "text/css")}
# Our own page loads only its own files; the run page (runpage.py) is one file with an
# inline style and one inline script, allowed by its hash and nothing else.
PAGE_POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; "
               "frame-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(CHECK_SCRIPT.encode()).digest()).decode()
RUN_PAGE_POLICY = (f"default-src 'none'; style-src 'unsafe-inline'; script-src 'sha256-{_SCRIPT_HASH}'; "
                   "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'self'")
Write = Callable[[bytes], bool]  # sends bytes of a stream; False once the client has gone


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    query: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)  # names in lower case
    body: bytes = b""


@dataclass
class Response:
    status: int
    body: bytes = b""
    content_type: str = "application/json"
    headers: dict[str, str] = field(default_factory=dict)
    stream: Callable[[Write], None] | None = None


def _json(value: Any, status: int = 200) -> Response:
    return Response(status, json.dumps(value, ensure_ascii=False).encode("utf-8"))


def error(status: int, message: str) -> Response:
    return _json({"error": redact_text(" ".join(message.split()))[:500]}, status)


class StartForm(BaseModel):
    """What the start form sends: the question, a corpus folder under --corpus-root and/or
    the web, and the settings a browser may choose (the endpoint and its key, and the web
    search provider, stay the ui's own)."""

    model_config = ConfigDict(extra="forbid")

    question: str
    corpus: str | None = None
    web: bool = False
    model: str | None = None
    rounds: int = Field(default=3, ge=1, le=20)
    max_tokens: int | None = Field(default=None, ge=1000)
    parallel: int | None = Field(default=None, ge=1, le=8)
    memory: bool = True
    review_plan: bool = False
    clarify: bool = False


@dataclass
class Workbench:
    corpus_root: Path
    runs_root: Path
    settings: dict[str, Any] = field(default_factory=dict)  # the ui's options: Settings.from_env's overrides
    origin: Origin = Origin("127.0.0.1", 0)  # the address bound (`http.make_server` sets it)
    runner: Runner = field(default_factory=Runner)
    poll_s: float = 0.3
    closing: bool = False
    verbose: bool = False

    def handle(self, request: Request) -> Response:
        try:
            check_request(request.method, request.headers, self.origin)
            return self._route(request)
        except Refused as exc:
            return error(exc.status, exc.message)
        except (Busy, ReviewError) as exc:
            return error(409 if isinstance(exc, Busy) else 400, str(exc))
        except BriefroomError as exc:
            return error(400, str(exc))
        except Exception as exc:  # a bug: one line for the page, the server goes on
            return error(500, f"internal error (a bug in briefroom, please report it): {type(exc).__name__}: {exc}")

    def base_settings(self, **more: Any) -> Settings:
        return Settings.from_env(**{**self.settings, **{k: v for k, v in more.items() if v is not None}})

    def _route(self, req: Request) -> Response:
        parts = [unquote(p) for p in req.path.split("/") if p]
        get = req.method == "GET"
        if get and req.path in _ASSETS:
            name, kind = _ASSETS[req.path]
            return Response(200, (STATIC / name).read_bytes(), kind, {"Content-Security-Policy": PAGE_POLICY})
        if parts[:1] == ["runs"] and len(parts) == 3 and parts[2] == "page" and get:
            return self._run_page(parts[1])
        if parts[:1] != ["api"]:
            raise Refused(404, f"no page {req.path[:80]!r}")
        return self._api(req, parts[1:], get)

    def _api(self, req: Request, parts: list[str], get: bool) -> Response:
        match parts, get:
            case ["config"], True:
                return _json(self._config())
            case ["runs"], True:
                return _json({"runs": panels.run_list(self.runs_root)})
            case ["runs"], False:
                return _json(self._start(json_body(req.body)), 202)
            case ["runs", name], True:
                return _json(self._run(name))
            case ["runs", name, "report"], True:
                return _json(panels.report(run_dir(self.runs_root, name)))
            case ["runs", name, "events"], True:
                return self._events(name)
            case ["runs", name, "answer"], False:
                where = run_dir(self.runs_root, name)
                return _json(self.runner.answer(name, where, json_body(req.body)).view(), 202)
            case ["runs", name, "question"], False:
                json_body(req.body)
                where = run_dir(self.runs_root, name)
                if panels.run_summary(where)["status"] != "paused":  # only a pause can wait on a question
                    raise Refused(409, f"the run {name} is not paused, so it waits on no question")
                return _json(self.runner.find_question(name, where).view(), 202)
            case ["runs", name, "stop"], False:
                json_body(req.body)
                run_dir(self.runs_root, name)
                if not self.runner.stop(name):
                    raise Refused(409, f"the run {name} is not going in this workbench")
                return _json({"stopping": name}, 202)
            case ["compare"], True:
                a, b = req.query.get("a", ""), req.query.get("b", "")
                if not a or not b or a == b:
                    raise Refused(400, "compare takes two different runs: ?a=RUN&b=RUN")
                return _json(panels.compare(run_dir(self.runs_root, a), run_dir(self.runs_root, b)))
            case ["memory"], True:
                return _json(panels.memory_items(self.base_settings(), req.query.get("zone") or None))
            case ["memory", "forget"], False:
                return _json(panels.forget(self.base_settings(), json_body(req.body).get("id")))
            case ["jobs"], True:
                return _json(panels.jobs(self.base_settings().database_url))
        raise Refused(404 if get or parts[:1] in (["runs"], ["memory"]) else 405,
                      f"no such request: {req.method} /api/{'/'.join(parts)[:80]}")

    def _config(self) -> dict[str, Any]:
        settings = self.base_settings()
        return {"corpus_root": str(self.corpus_root), "runs_dir": str(self.runs_root),
                "folders": panels.corpus_folders(self.corpus_root, skip=self.runs_root),
                "model": settings.model or "test", "endpoint": bool(settings.base_url),
                "database": bool(settings.database_url), "data_dir": str(settings.data_dir)}

    def _start(self, body: dict[str, Any]) -> dict[str, Any]:
        try:
            form = StartForm.model_validate(body)
        except ValidationError as exc:
            first = exc.errors()[0]
            raise Refused(400, f"{'.'.join(map(str, first['loc'])) or 'form'}: {first['msg']}") from None
        if not form.corpus and not form.web:
            raise Refused(400, "choose a corpus folder, or the web, or both")
        corpora = [inside(self.corpus_root, form.corpus, "corpus folder")] if form.corpus else []
        settings = self.base_settings(model=form.model or None, rounds=form.rounds, max_tokens=form.max_tokens,
                                      parallel=form.parallel, memory=form.memory, web=form.web or None)
        if not settings.model:
            raise Refused(400, "choose a model: 'test', 'embedded', or a model of the ui's endpoint (--base-url)")
        out = self._free_run_dir(form.question)
        request = ResearchRequest(question=form.question, corpus=corpora, out=out,
                                  review=ReviewOptions(plan=form.review_plan, clarify=form.clarify))
        live = self.runner.start(lambda: new_run(request, settings))
        return live.view()

    def _free_run_dir(self, question: str) -> Path:
        name = default_run_dir(question or "run").name
        out = self.runs_root / name
        for n in range(2, 100):  # two runs started in the same second with the same question
            if not out.exists():
                break
            out = self.runs_root / f"{name}-{n}"
        return out

    def _run(self, name: str) -> dict[str, Any]:
        where = run_dir(self.runs_root, name)
        summary = panels.run_summary(where)
        live = self.runner.get(name)
        summary["live"] = live.view() if live else None
        return summary

    def _run_page(self, name: str) -> Response:
        where = run_dir(self.runs_root, name)
        try:
            page = render_page(where, load_events(where) if (where / "run.jsonl").is_file() else [])
        except BriefroomError as exc:
            raise Refused(422, str(exc)) from None
        return Response(200, page.encode("utf-8"), "text/html; charset=utf-8",
                        {"Content-Security-Policy": RUN_PAGE_POLICY})

    def _events(self, name: str) -> Response:
        """The live view: the run log's new events, and the run's state, as Server-Sent
        Events, until the run stops going (the page opens it again after an answer)."""
        where = run_dir(self.runs_root, name)
        return Response(200, content_type="text/event-stream", headers={"Cache-Control": "no-store"},
                        stream=lambda write: self._follow(name, where, write))

    def _follow(self, name: str, where: Path, write: Write) -> None:
        tail, last_state, quiet_since = LogTail(where / "run.jsonl"), None, time.monotonic()
        if not write(_sse("reset", {})):
            return
        while not self.closing:
            lines = tail.read()
            for line in lines:
                if not write(_sse("log", line)):
                    return
            live = self.runner.get(name)
            state = self._state(name, where)
            if state != last_state:
                if not write(_sse("state", state)):
                    return
                last_state = state
            if lines:
                quiet_since = time.monotonic()
            elif time.monotonic() - quiet_since > 10:  # a comment keeps proxies and the browser from giving up
                if not write(b": still here\n\n"):
                    return
                quiet_since = time.monotonic()
            if not (live is not None and live.active) and not lines and state["status"] != "running":
                write(_sse("end", state))
                return
            time.sleep(self.poll_s)

    def _state(self, name: str, where: Path) -> dict[str, Any]:
        from briefroom import runs

        live = self.runner.get(name)
        view = live.view() if live else {"state": None, "waiting_for": None, "error": None, "progress": []}
        status: str = "unknown"
        with contextlib.suppress(BriefroomError):
            status = runs.load(where).status
        if live is not None and live.active:
            status = "running"  # run.json says so a moment after the thread starts
        return {**view, "status": status, "report_ready": (where / "report.md").is_file()}


def _sse(kind: str, data: Any) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode("utf-8")
