"""Drive Debian's headless Chromium over the DevTools protocol on a pipe (no port, no
network, no extra package): open a page, evaluate JavaScript, click an element with a
real mouse event. For the report's and the viewer's browser tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--hide-scrollbars"]


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    raise AssertionError("no Chromium: install Debian's package (apt-get install chromium); "
                         ".ci/run does this before `make test`")


class Page:
    """One tab of a fresh headless Chromium (its own profile under ``profile``)."""

    def __init__(self, url: str, profile: Path, width: int = 1280, height: int = 1000,
                 timeout: float = 60.0) -> None:
        for attempt in range(3):  # a browser that dies at start (a loaded machine): again
            try:
                self._open(url, Path(f"{profile}-{attempt}"), width, height, timeout)
                return
            except (BrokenPipeError, RuntimeError):
                self.close()
                if attempt == 2:
                    raise

    def _open(self, url: str, profile: Path, width: int, height: int, timeout: float) -> None:
        to_child, self._w = os.pipe()
        self._r, from_child = os.pipe()

        def fds() -> None:  # the protocol's pipe: Chromium reads fd 3, writes fd 4
            a, b = os.dup(to_child), os.dup(from_child)  # neither is 3 or 4 now
            os.dup2(a, 3)
            os.dup2(b, 4)

        self.proc = subprocess.Popen(
            [chromium(), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={profile}",
             f"--window-size={width},{height}", "about:blank"],
            preexec_fn=fds, close_fds=False,
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_child)
        os.close(from_child)
        self._buf = b""
        self._id = 0
        self.timeout = timeout
        target = self._call("Target.createTarget", {"url": url})["targetId"]
        self.session = self._call("Target.attachToTarget",
                                  {"targetId": target, "flatten": True})["sessionId"]
        self._call("Emulation.setDeviceMetricsOverride",
                   {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                   session=True)
        # the new tab is about:blank until the page commits
        self.wait_for("document.readyState === 'complete' && location.href !== 'about:blank'",
                      f"{url} to load")

    def _call(self, method: str, params: dict[str, Any] | None = None,
              session: bool = False) -> dict[str, Any]:
        self._id += 1
        msg: dict[str, Any] = {"id": self._id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self._w, json.dumps(msg).encode() + b"\0")
        end = time.monotonic() + self.timeout
        while True:
            while b"\0" not in self._buf:
                if time.monotonic() > end:
                    raise TimeoutError(method)
                chunk = os.read(self._r, 1 << 16)
                if not chunk:
                    raise RuntimeError(f"Chromium closed the pipe during {method}")
                self._buf += chunk
            raw, self._buf = self._buf.split(b"\0", 1)
            reply = json.loads(raw)
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def eval(self, expression: str) -> Any:
        """The value of a JavaScript expression in the page."""
        result = self._call("Runtime.evaluate", {"expression": expression,
                                                 "returnByValue": True,
                                                 "awaitPromise": True}, session=True)
        if "exceptionDetails" in result:
            raise RuntimeError(result["exceptionDetails"].get("text", "exception"))
        return result["result"].get("value")

    def wait_for(self, expression: str, what: str, timeout: float | None = None) -> Any:
        """The first truthy value of ``expression``, polled every 50 ms for up to
        ``timeout`` seconds (the page's own by default). Asked while the page navigates, Chromium answers "Inspected target
        navigated or closed": that is "not yet", not an error."""
        end = time.monotonic() + (self.timeout if timeout is None else timeout)
        while True:
            try:
                value = self.eval(expression)
            except RuntimeError as exc:
                if "navigated or closed" not in str(exc):
                    raise
                value = None
            if value:
                return value
            if time.monotonic() > end:
                raise TimeoutError(f"waiting for {what}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A left click (press and release) at the centre of the first element matching
        ``selector``, scrolled into view first."""
        box = self.eval(f"(() => {{ const e = document.querySelector({json.dumps(selector)});"
                        " if (!e) return null; e.scrollIntoView({block: 'center'});"
                        " const r = e.getBoundingClientRect();"
                        " return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        if box is None:
            raise AssertionError(f"no element {selector}")
        for kind in ("mousePressed", "mouseReleased"):
            self._call("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1],
                                                    "button": "left", "clickCount": 1},
                       session=True)

    def close(self) -> None:
        if getattr(self, "proc", None) is None:
            return
        try:
            self._call("Browser.close")
        except (RuntimeError, TimeoutError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()  # this browser only, by its process
            self.proc.wait()
        os.close(self._r)
        os.close(self._w)
        self.proc = None

    def __enter__(self) -> Page:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
