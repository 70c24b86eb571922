"""A headless Chromium the tests drive like a person: Debian's `chromium` over the
DevTools protocol on a pipe (`--remote-debugging-pipe`: commands on fd 3, replies on
fd 4, each a JSON message ended by NUL), so no driver package and no port is needed.

It clicks with real mouse events at an element's centre, types with real key input,
takes screenshots, and records every request the page makes and every console error.
`png_pixels` decodes a screenshot with the standard library, to check it is not blank.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import struct
import subprocess
import tempfile
import threading
import time
import zlib
from pathlib import Path
from typing import Any

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--disable-default-apps", "--disable-extensions", "--metrics-recording-only", "--mute-audio"]


class BrowserError(AssertionError):
    pass


class Browser:
    def __init__(self, width: int = 1280, height: int = 900):
        assert CHROMIUM, "headless Chromium is needed for this test: `make browser` installs Debian's chromium"
        self.profile = tempfile.mkdtemp(prefix="briefroom-chromium-")
        self.log = open(Path(self.profile) / "chromium.log", "wb")
        commands_r, self._commands = os.pipe()
        self._replies, replies_w = os.pipe()
        # bash puts our pipe ends on fds 3 and 4, where Chromium looks for them (dash takes no fd above 9)
        self.proc = subprocess.Popen(
            ["bash", "-c", f'exec "$@" 3<&{commands_r} 4>&{replies_w}', "bash", CHROMIUM, *FLAGS,
             "--remote-debugging-pipe", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
             "about:blank"],
            pass_fds=(commands_r, replies_w), stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)
        os.close(commands_r)
        os.close(replies_w)
        self._next = 0
        self._replies_by_id: dict[int, dict[str, Any]] = {}
        self._cond = threading.Condition()
        self.events: list[dict[str, Any]] = []
        self.requests: list[str] = []
        self.console_errors: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        targets = self.send("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Network", "Log"):
            self.send(f"{domain}.enable", session=self.session)
        self.send("Emulation.setDeviceMetricsOverride", {"width": width, "height": height, "deviceScaleFactor": 1,
                                                          "mobile": False}, session=self.session)

    # --- the protocol ------------------------------------------------------------------
    def _read(self) -> None:
        buffer = b""
        while True:
            try:
                chunk = os.read(self._replies, 1 << 16)
            except OSError:
                chunk = b""
            if not chunk:
                with self._cond:
                    self._cond.notify_all()
                return
            buffer += chunk
            *messages, buffer = buffer.split(b"\0")
            for raw in messages:
                message = json.loads(raw)
                with self._cond:
                    if "id" in message:
                        self._replies_by_id[message["id"]] = message
                    else:
                        self._on_event(message)
                    self._cond.notify_all()

    def _on_event(self, message: dict[str, Any]) -> None:
        self.events.append(message)
        method, params = message.get("method"), message.get("params", {})
        if method == "Network.requestWillBeSent":
            self.requests.append(params["request"]["url"])
        elif method == "Runtime.consoleAPICalled" and params.get("type") in ("error", "assert"):
            self.console_errors.append(" ".join(str(a.get("value", a.get("description", ""))) for a in params["args"]))
        elif method == "Runtime.exceptionThrown":
            details = params["exceptionDetails"]
            self.console_errors.append(details.get("exception", {}).get("description") or details.get("text", "?"))
        elif method == "Log.entryAdded" and params["entry"]["level"] == "error":
            self.console_errors.append(f"{params['entry'].get('url', '')}: {params['entry']['text']}")

    def send(self, method: str, params: dict[str, Any] | None = None, *, session: str | None = None,
             timeout: float = 60) -> dict[str, Any]:
        with self._cond:
            self._next += 1
            ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self._commands, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        with self._cond:
            while ident not in self._replies_by_id:
                left = deadline - time.monotonic()
                if left <= 0 or self.proc.poll() is not None:
                    raise BrowserError(f"no reply to {method} (chromium {'ended' if self.proc.poll() is not None else 'hangs'})")
                self._cond.wait(min(left, 0.5))
            reply = self._replies_by_id.pop(ident)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error']}")
        return reply.get("result", {})

    def page(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.send(method, params, session=self.session)

    # --- what a person does ------------------------------------------------------------
    def open(self, url: str) -> None:
        self.page("Page.navigate", {"url": url})
        self.wait_for("document.readyState === 'complete'")

    def evaluate(self, expression: str) -> Any:
        result = self.page("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('text')}")
        return result["result"].get("value")

    def wait_for(self, expression: str, timeout: float = 120) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            value = self.evaluate(expression)
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"waited {timeout:.0f}s for {expression!r}")
            time.sleep(0.2)

    def click(self, selector: str) -> None:
        box = self.wait_for(f"""(() => {{ const e = document.querySelector({json.dumps(selector)});
            if (!e || e.offsetParent === null) return null;
            e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect();
            return {{x: r.left + r.width / 2, y: r.top + r.height / 2}}; }})()""", timeout=30)
        for kind in ("mouseMoved", "mousePressed", "mouseReleased"):
            self.page("Input.dispatchMouseEvent", {"type": kind, "x": box["x"], "y": box["y"], "button": "left",
                                                   "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        self.click(selector)
        self.page("Input.insertText", {"text": text})

    def screenshot(self, path: Path, scale: float = 1.0) -> bytes:
        metrics = self.page("Page.getLayoutMetrics")["cssVisualViewport"]
        data = base64.b64decode(self.page("Page.captureScreenshot", {
            "format": "png", "clip": {"x": 0, "y": metrics["pageY"], "width": metrics["clientWidth"],
                                      "height": metrics["clientHeight"], "scale": scale}})["data"])
        path.write_bytes(data)
        return data

    def close(self) -> None:
        try:
            self.send("Browser.close", timeout=10)
        except BrowserError:
            pass
        try:
            self.proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._commands)
        self.log.close()
        shutil.rmtree(self.profile, ignore_errors=True)


def png_pixels(data: bytes) -> tuple[int, int, int, bytes]:
    """Width, height, channels and the raw 8-bit samples of a PNG (what Chromium and
    pdftoppm write: 8-bit grey, RGB or RGBA, not interlaced), filters undone."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
    pos, idat, header = 8, b"", b""
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = body
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    width, height, depth, colour, _, _, interlace = struct.unpack(">IIBBBBB", header)
    assert depth == 8 and colour in (0, 2, 6) and not interlace, f"PNG depth {depth}, colour type {colour}"
    channels = {0: 1, 2: 3, 6: 4}[colour]
    raw, stride = zlib.decompress(idat), width * channels
    out, prior = bytearray(), bytearray(stride)
    for y in range(height):
        kind, row = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for x in range(stride):
            left = row[x - channels] if x >= channels else 0
            up, corner = prior[x], prior[x - channels] if x >= channels else 0
            if kind == 1:
                row[x] = (row[x] + left) & 0xFF
            elif kind == 2:
                row[x] = (row[x] + up) & 0xFF
            elif kind == 3:
                row[x] = (row[x] + (left + up) // 2) & 0xFF
            elif kind == 4:
                p = left + up - corner
                pa, pb, pc = abs(p - left), abs(p - up), abs(p - corner)
                row[x] = (row[x] + (left if pa <= pb and pa <= pc else up if pb <= pc else corner)) & 0xFF
        out += row
        prior = row
    return width, height, channels, bytes(out)


def luminance_spread(data: bytes) -> tuple[float, int]:
    """A screenshot's pixel variance (of luminance) and how many distinct grey levels it
    has: a blank page has variance ~0 and one level."""
    width, height, channels, pixels = png_pixels(data)
    levels = [(299 * pixels[i] + 587 * pixels[i + 1] + 114 * pixels[i + 2]) // 1000
              for i in range(0, len(pixels), channels)]
    mean = sum(levels) / len(levels)
    return sum((v - mean) ** 2 for v in levels) / len(levels), len(set(levels))
