"""Headless Chromium driven over the DevTools protocol on a pipe (stdlib only).

``chromium_page(path)`` opens a local HTML file in a fresh headless Chromium
(no network, fresh profile), waits for the load event, and returns the console
errors, every image's rendered size, and a full-page PNG screenshot. The
fixture skips when no Chromium is installed (``apt-get install chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import select
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-extensions",
    "--remote-debugging-pipe",
)
TIMEOUT_S = 60.0

IMAGES_JS = """JSON.stringify(Array.from(document.images).map(img => ({
  alt: img.alt, complete: img.complete, width: img.naturalWidth, height: img.naturalHeight,
  shown_width: img.getBoundingClientRect().width})))"""


@dataclass
class PageResult:
    console_errors: list[str] = field(default_factory=list)
    images: list[dict[str, Any]] = field(default_factory=list)
    title: str = ""
    screenshot_png: bytes = b""
    requests: list[str] = field(default_factory=list)


class _Pipe:
    """DevTools messages: JSON objects separated by NUL bytes on fds 3 (in) / 4 (out)."""

    def __init__(self, process: subprocess.Popen[bytes], write_fd: int, read_fd: int) -> None:
        self.process = process
        self.write_fd = write_fd
        self.read_fd = read_fd
        self.buffer = b""
        self.next_id = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> Any:
        self.next_id += 1
        message: dict[str, Any] = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.write_fd, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_event(self, method: str) -> dict[str, Any]:
        for index, event in enumerate(self.events):
            if event.get("method") == method:
                return self.events.pop(index)
        while True:
            event = self._read()
            if event.get("method") == method:
                return event
            self.events.append(event)

    def _read(self) -> dict[str, Any]:
        deadline = time.monotonic() + TIMEOUT_S
        while b"\0" not in self.buffer:
            remaining = deadline - time.monotonic()
            ready, _, _ = select.select([self.read_fd], [], [], max(0.0, remaining))
            if not ready:
                raise TimeoutError("Chromium did not answer in time")
            chunk = os.read(self.read_fd, 1 << 20)
            if not chunk:
                raise RuntimeError("Chromium closed the DevTools pipe")
            self.buffer += chunk
        message, self.buffer = self.buffer.split(b"\0", 1)
        return dict(json.loads(message))


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        found = shutil.which(name)
        if found:
            return found
    return None


def _launch(binary: str, profile: Path) -> tuple[subprocess.Popen[bytes], _Pipe]:
    to_chrome_read, to_chrome_write = os.pipe()
    from_chrome_read, from_chrome_write = os.pipe()

    def _wire_fds() -> None:  # Chromium reads commands on fd 3 and answers on fd 4
        os.dup2(to_chrome_read, 3)
        os.dup2(from_chrome_write, 4)

    process = subprocess.Popen(
        [binary, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        pass_fds=(3, 4, to_chrome_read, from_chrome_write),
        preexec_fn=_wire_fds,  # noqa: PLW1509 - single-threaded test process
    )
    os.close(to_chrome_read)
    os.close(from_chrome_write)
    return process, _Pipe(process, to_chrome_write, from_chrome_read)


def _collect_errors(events: list[dict[str, Any]]) -> list[str]:
    errors = []
    for event in events:
        method, params = event.get("method"), event.get("params", {})
        if method == "Runtime.consoleAPICalled" and params.get("type") in {"error", "assert"}:
            errors.append(json.dumps(params.get("args")))
        elif method == "Runtime.exceptionThrown":
            errors.append(json.dumps(params.get("exceptionDetails")))
        elif method == "Log.entryAdded" and params.get("entry", {}).get("level") == "error":
            errors.append(params["entry"].get("text", ""))
    return errors


def _load(pipe: _Pipe, url: str) -> PageResult:
    targets = pipe.send("Target.getTargets")["targetInfos"]
    page = next(t for t in targets if t["type"] == "page")
    session = pipe.send("Target.attachToTarget", {"targetId": page["targetId"], "flatten": True})["sessionId"]
    for domain in ("Page", "Runtime", "Log", "Network"):
        pipe.send(f"{domain}.enable", session=session)
    pipe.send("Page.navigate", {"url": url}, session=session)
    pipe.wait_event("Page.loadEventFired")
    result = PageResult()
    evaluated = pipe.send(
        "Runtime.evaluate", {"expression": IMAGES_JS, "returnByValue": True}, session=session
    )
    result.images = json.loads(evaluated["result"]["value"])
    title = pipe.send(
        "Runtime.evaluate", {"expression": "document.title", "returnByValue": True}, session=session
    )
    result.title = title["result"]["value"]
    height = pipe.send(
        "Runtime.evaluate",
        {"expression": "document.documentElement.scrollHeight", "returnByValue": True},
        session=session,
    )["result"]["value"]
    pipe.send(
        "Emulation.setDeviceMetricsOverride",
        {"width": 1200, "height": int(height), "deviceScaleFactor": 1, "mobile": False},
        session=session,
    )
    shot = pipe.send("Page.captureScreenshot", {"format": "png"}, session=session)
    result.screenshot_png = base64.b64decode(shot["data"])
    result.console_errors = _collect_errors(pipe.events)
    result.requests = [
        e["params"]["request"]["url"] for e in pipe.events if e.get("method") == "Network.requestWillBeSent"
    ]
    return result


@pytest.fixture
def chromium_page(tmp_path: Path) -> Iterator[Callable[[Path], PageResult]]:
    """Open a local HTML file in headless Chromium; skips when Chromium is absent."""
    binary = _chromium()
    if binary is None:
        pytest.skip("Chromium is not installed (Debian: apt-get install chromium)")
    processes: list[subprocess.Popen[bytes]] = []

    def _open(path: Path) -> PageResult:
        profile = tmp_path / f"chromium-profile-{len(processes)}"
        process, pipe = _launch(binary, profile)
        processes.append(process)
        try:
            return _load(pipe, path.resolve().as_uri())
        finally:
            try:
                pipe.send("Browser.close")
            except (RuntimeError, TimeoutError, OSError):
                process.kill()
            os.close(pipe.write_fd)
            os.close(pipe.read_fd)

    yield _open
    for process in processes:
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
