"""A minimal headless-Chromium driver over the DevTools pipe (no websocket or browser-automation package needed).

Chromium started with ``--remote-debugging-pipe`` reads DevTools protocol commands (JSON, each ended by a NUL
byte) on file descriptor 3 and writes replies and events on descriptor 4. :class:`Browser` opens one page and
offers what the demo's tests and screenshots need: load a URL, wait until a JavaScript condition holds, click an
element, capture a PNG.

    with Browser() as browser:
        browser.open("http://127.0.0.1:7860/?tab=detect", width=1280, height=1400)
        browser.wait_for("document.querySelector('#detect-status textarea')?.value.length > 0", timeout=60)
        browser.screenshot("detect.png")
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

__all__ = ["Browser", "BrowserError", "find_chromium"]

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")


class BrowserError(RuntimeError):
    """Chromium is missing, died, or a command failed or timed out."""


def find_chromium() -> str | None:
    """The path of a Chromium (or Chrome) binary on PATH, or None."""
    for name in CANDIDATES:
        path = shutil.which(name)
        if path:
            return path
    return None


class Browser:
    """One headless Chromium with one page, driven over the DevTools pipe (see the module docstring).

    Args:
        binary: the browser executable (default: :func:`find_chromium`).
        timeout: seconds to wait for any single reply.
    """

    def __init__(self, binary: str | None = None, timeout: float = 30.0) -> None:
        self.binary = binary or find_chromium()
        if self.binary is None:
            raise BrowserError(f"no Chromium found on PATH (looked for {', '.join(CANDIDATES)})")
        self.timeout = timeout
        self._next_id = 0
        self._buffer = b""
        self._session: str | None = None
        self._proc: subprocess.Popen | None = None

    # ------------------------------------------------------------------ process

    def __enter__(self) -> "Browser":
        self.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def start(self) -> None:
        """Start Chromium with the pipe on descriptors 3 (commands in) and 4 (replies out)."""
        to_child, self._write_fd = os.pipe()
        self._read_fd, from_child = os.pipe()

        def wire() -> None:  # runs in the child before exec
            os.dup2(to_child, 3)
            os.dup2(from_child, 4)

        # WebGL (for the 3D viewer) runs on the SwiftShader software renderer: no GPU needed
        args = [self.binary, "--headless", "--no-sandbox", "--use-angle=swiftshader", "--enable-unsafe-swiftshader",
                "--disable-dev-shm-usage",
                "--hide-scrollbars", "--mute-audio", "--no-first-run", "--remote-debugging-pipe", "about:blank"]
        self._proc = subprocess.Popen(args, preexec_fn=wire, pass_fds=(3, 4), stdout=subprocess.DEVNULL,
                                      stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        self._session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        self.send("Page.enable", session=True)

    def close(self) -> None:
        """Close the browser (politely, then by force) and the pipe."""
        if self._proc is None:
            return
        try:
            self._write(json.dumps({"id": 0, "method": "Browser.close"}))
            self._proc.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self._proc.kill()
            self._proc.wait()
        finally:
            for fd in (self._write_fd, self._read_fd):
                try:
                    os.close(fd)
                except OSError:
                    pass
            self._proc = None

    # ------------------------------------------------------------------ protocol

    def _write(self, text: str) -> None:
        os.write(self._write_fd, text.encode("utf-8") + b"\0")

    def _read_message(self, deadline: float) -> dict[str, Any]:
        import select

        while b"\0" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0:
                raise BrowserError("timed out waiting for Chromium")
            ready, _, _ = select.select([self._read_fd], [], [], left)
            if ready:
                chunk = os.read(self._read_fd, 1 << 16)
                if not chunk:
                    raise BrowserError("Chromium closed the DevTools pipe (it exited)")
                self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        return json.loads(message)

    def send(self, method: str, params: dict[str, Any] | None = None, session: bool = False) -> dict[str, Any]:
        """Send one command (to the page when ``session``) and return its result; events are skipped."""
        self._next_id += 1
        command: dict[str, Any] = {"id": self._next_id, "method": method, "params": params or {}}
        if session:
            command["sessionId"] = self._session
        self._write(json.dumps(command))
        deadline = time.monotonic() + self.timeout
        while True:
            message = self._read_message(deadline)
            if message.get("id") != self._next_id:
                continue
            if "error" in message:
                raise BrowserError(f"{method} failed: {message['error'].get('message')}")
            return message.get("result", {})

    # ------------------------------------------------------------------ page

    def evaluate(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True}, session=True)
        if "exceptionDetails" in result:
            raise BrowserError(f"JavaScript error in {expression!r}: {result['exceptionDetails'].get('text')}")
        return result.get("result", {}).get("value")

    def open(self, url: str, width: int = 1280, height: int = 1400) -> None:
        """Set the viewport and load ``url`` (returns when the document is complete)."""
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session=True)
        self.send("Page.navigate", {"url": url}, session=True)
        self.wait_for("document.readyState === 'complete'", timeout=self.timeout)

    def wait_for(self, condition: str, timeout: float = 60.0, poll: float = 0.25) -> None:
        """Wait until the JavaScript ``condition`` is true; :class:`BrowserError` after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.evaluate(f"Boolean({condition})"):
                return
            time.sleep(poll)
        raise BrowserError(f"timed out after {timeout:g} s waiting for {condition!r}")

    def click(self, selector: str, fx: float = 0.5, fy: float = 0.5) -> tuple[float, float]:
        """Left-click the element matching the CSS ``selector`` at fractions ``(fx, fy)`` of its width and height
        (scrolled into view first); returns the click position in the viewport."""
        rect = self.evaluate(f"(() => {{ const e = document.querySelector({json.dumps(selector)}); "
                             "if (!e) return null; e.scrollIntoView({block: 'center'}); "
                             "const r = e.getBoundingClientRect(); return [r.x, r.y, r.width, r.height]; })()")
        if rect is None:
            raise BrowserError(f"no element matches {selector!r}")
        x, y = rect[0] + fx * rect[2], rect[1] + fy * rect[3]
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": x, "y": y, "button": "left", "clickCount": 1},
                      session=True)
        return x, y

    def screenshot(self, path: str | Path, full_page: bool = True) -> Path:
        """Save the page as a PNG (the whole page height when ``full_page``); returns the path."""
        params: dict[str, Any] = {"format": "png"}
        if full_page:
            size = self.evaluate("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params.update(captureBeyondViewport=True,
                          clip={"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1})
        data = self.send("Page.captureScreenshot", params, session=True)["data"]
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(base64.b64decode(data))
        return path
