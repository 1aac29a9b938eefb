"""Headless Chromium for the viewer's tests: the page's DOM after its scripts ran (``--dump-dom``)
and a small DevTools-protocol driver over ``--remote-debugging-pipe`` for what needs a reader's
hands (keys, typing). Debian's ``chromium`` package: ``scripts/install-chromium.sh`` installs it
(``make test-setup`` runs the script)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import pytest

INSTALL = "run `sudo bash scripts/install-chromium.sh` (or `sudo apt-get install -y chromium`)"
FLAGS = ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--mute-audio"]


def find_chromium(path: str | None = None) -> str:
    """The Chromium executable (``$FOLDLOG_CHROMIUM``, else ``chromium`` on ``path``); a test
    that cannot find one fails saying how to install it."""
    named = os.environ.get("FOLDLOG_CHROMIUM")
    if named and path is None:
        return named
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name, path=path)
        if found:
            return found
    pytest.fail(f"the viewer's browser tests need Chromium, which is not installed: {INSTALL}")


def dump_dom(page: Path, fragment: str = "", *, budget_ms: int = 20000) -> str:
    """The DOM of ``page`` (opened at ``#fragment``) once its scripts ran, as HTML."""
    url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
    done = subprocess.run(
        [find_chromium(), *FLAGS, f"--virtual-time-budget={budget_ms}", "--dump-dom", url],
        capture_output=True,
        timeout=120,
        check=True,
    )
    return done.stdout.decode("utf-8")


class Element:
    def __init__(self, tag: str, attrs: dict[str, str], parent: Element | None) -> None:
        self.tag, self.attrs, self.parent = tag, attrs, parent
        self.classes = set(attrs.get("class", "").split())
        self.children: list[Element] = []
        self.text: list[str] = []

    def ancestors(self) -> list[Element]:
        out, at = [], self.parent
        while at is not None:
            out.append(at)
            at = at.parent
        return out

    def all_text(self) -> str:
        return "".join(self.text) + "".join(c.all_text() for c in self.children)

    def find(self, attr: str) -> list[Element]:
        found = [self] if attr in self.attrs else []
        for child in self.children:
            found += child.find(attr)
        return found


_VOID = {"meta", "img", "input", "br", "hr", "link"}


class _Tree(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.root = Element("#root", {}, None)
        self.at = self.root

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        node = Element(tag, {k: v or "" for k, v in attrs}, self.at)
        self.at.children.append(node)
        if tag not in _VOID:
            self.at = node

    def handle_endtag(self, tag: str) -> None:
        at: Element | None = self.at
        while at is not None and at.tag != tag:
            at = at.parent
        if at is not None and at.parent is not None:
            self.at = at.parent

    def handle_data(self, data: str) -> None:
        self.at.text.append(data)


def parse(html: str) -> Element:
    tree = _Tree()
    tree.feed(html)
    return tree.root


class Browser:
    """One headless Chromium driven over the DevTools protocol on a pipe (fd 3 in, fd 4 out)."""

    def __init__(self) -> None:
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()

        def wire() -> None:
            os.dup2(to_chrome_r, 3)
            os.dup2(from_chrome_w, 4)

        self.proc = subprocess.Popen(
            [find_chromium(), *FLAGS, "--remote-debugging-pipe", "--window-size=1280,900", "about:blank"],
            pass_fds=(3, 4),
            preexec_fn=wire,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buffer = b""
        self._id = 0
        self._session: str | None = None

    def call(self, method: str, **params: Any) -> dict[str, Any]:
        self._id += 1
        message: dict[str, Any] = {"id": self._id, "method": method, "params": params}
        if self._session is not None and not method.startswith("Target."):
            message["sessionId"] = self._session
        os.write(self._to_chrome, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                result: dict[str, Any] = reply.get("result", {})
                return result

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_chrome, 1 << 20)
            if not chunk:
                raise RuntimeError("chromium closed the pipe")
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\0")
        parsed: dict[str, Any] = json.loads(line)
        return parsed

    def open(self, page: Path, fragment: str = "", *, timeout: float = 30.0) -> float:
        """Open ``page`` and wait until its timeline is built; returns the page's own clock at
        its first screen (``data-first-ms``), in milliseconds."""
        url = page.resolve().as_uri() + (f"#{fragment}" if fragment else "")
        target = self.call("Target.createTarget", url="about:blank")["targetId"]
        self._session = self.call("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
        self.call("Page.enable")
        self.call("Page.navigate", url=url)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            if self.js("document.documentElement && document.documentElement.dataset.ready") == "1":
                return float(self.js("Number(document.documentElement.dataset.firstMs)"))
            time.sleep(0.05)
        raise TimeoutError(f"{page} was not ready within {timeout} s")

    def js(self, expression: str) -> Any:
        result = self.call("Runtime.evaluate", expression=expression, returnByValue=True, awaitPromise=True)
        if "exceptionDetails" in result:
            raise RuntimeError(f"{expression}: {result['exceptionDetails']}")
        return result["result"].get("value")

    def key(self, key: str) -> None:
        codes = {"ArrowDown": 40, "ArrowUp": 38, "Enter": 13, "Escape": 27}
        text = key if len(key) == 1 else ""
        common: dict[str, Any] = {"key": key, "windowsVirtualKeyCode": codes.get(key, ord(key.upper()[0]))}
        self.call("Input.dispatchKeyEvent", type="keyDown", text=text, **common)
        self.call("Input.dispatchKeyEvent", type="keyUp", **common)

    def type(self, text: str) -> None:
        self.call("Input.insertText", text=text)

    def screenshot(self, path: Path) -> None:
        import base64

        path.write_bytes(base64.b64decode(self.call("Page.captureScreenshot", format="png")["data"]))

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (RuntimeError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        os.close(self._to_chrome)
        os.close(self._from_chrome)
