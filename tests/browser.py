"""Headless Chromium for the project's tests, driven over the DevTools protocol with aiohttp's websocket client.

    page = load("file:///.../timeline.html", {"boxes": "document.querySelectorAll('rect.box').length"})
    assert page.errors == [] and page.values["boxes"] > 0

`load` starts a fresh browser (its own profile folder, removed after), opens the page,
waits for its load event, evaluates each expression in order (later ones see what
earlier ones did), and returns the values with every console error, uncaught exception
and browser log error the page produced; given `screenshot`, the whole page as PNG there
(1400 px wide, as a reader's window). `find()` is the browser to use, or None
(RELAYCHAOS_CHROMIUM, else chromium, chromium-browser, google-chrome on PATH).
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

NAMES = ("chromium", "chromium-browser", "google-chrome")


def find() -> str | None:
    for name in (os.environ.get("RELAYCHAOS_CHROMIUM"), *NAMES):
        if name and shutil.which(name):
            return shutil.which(name)
    return None


@dataclass
class Page:
    """What loading a page showed: the expressions' values and the errors it reported."""

    values: dict[str, object] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


class _Protocol:
    """Commands and their answers over one DevTools websocket; events kept in arrival order."""

    def __init__(self, ws: aiohttp.ClientWebSocketResponse):
        self.ws, self.next_id, self.pending, self.events = ws, 0, {}, []
        self.arrived = asyncio.Event()

    async def read(self) -> None:
        async for msg in self.ws:
            data = json.loads(msg.data)
            if "id" in data and data["id"] in self.pending:
                self.pending.pop(data["id"]).set_result(data)
            else:
                self.events.append(data)
                self.arrived.set()

    async def call(self, method: str, session: str | None = None, timeout: float = 20, **params) -> dict:
        self.next_id += 1
        answer = asyncio.get_running_loop().create_future()
        self.pending[self.next_id] = answer
        await self.ws.send_str(
            json.dumps(
                {"id": self.next_id, "method": method, "params": params, **({"sessionId": session} if session else {})}
            )
        )
        data = await asyncio.wait_for(answer, timeout)
        if "error" in data:
            raise RuntimeError(f"DevTools {method}: {data['error']}")
        return data["result"]

    async def wait_for(self, method: str, timeout: float) -> dict:
        deadline = time.monotonic() + timeout
        while True:
            found = next((e for e in self.events if e.get("method") == method), None)
            if found:
                return found
            self.arrived.clear()
            await asyncio.wait_for(self.arrived.wait(), max(deadline - time.monotonic(), 0.01))


def _errors(events: list[dict]) -> list[str]:
    out = []
    for e in events:
        p = e.get("params", {})
        if e.get("method") == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            out.append(f"uncaught: {d.get('exception', {}).get('description') or d.get('text')}")
        elif e.get("method") == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            out.append(
                "console."
                + p["type"]
                + ": "
                + " ".join(str(a.get("value", a.get("description"))) for a in p.get("args", []))
            )
        elif e.get("method") == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            out.append(f"log: {p['entry'].get('text')} {p['entry'].get('url', '')}".rstrip())
    return out


async def _load(browser: str, url: str, expressions: dict[str, str], timeout: float, screenshot: Path | None) -> Page:
    profile = Path(tempfile.mkdtemp(prefix="relaychaos-chromium-"))
    log = open(profile / "stderr.log", "w")  # noqa: SIM115 (Chromium's stderr; closed in the finally below)
    proc = subprocess.Popen(
        [
            browser,
            "--headless",
            "--disable-gpu",
            "--no-sandbox",
            "--no-first-run",
            "--remote-debugging-port=0",
            f"--user-data-dir={profile}",
            "--window-size=1400,900",
            "about:blank",
        ],
        stdout=subprocess.DEVNULL,
        stderr=log,
    )
    try:
        port_file, deadline = profile / "DevToolsActivePort", time.monotonic() + timeout
        while not (port_file.exists() and len(port_file.read_text().splitlines()) >= 2):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"{browser} did not open its DevTools port (exit status {proc.poll()}): "
                    + (profile / "stderr.log").read_text()[-800:]
                )
            await asyncio.sleep(0.05)
        port, path = port_file.read_text().splitlines()[:2]
        async with (
            aiohttp.ClientSession() as http,
            http.ws_connect(f"ws://127.0.0.1:{port}{path}", max_msg_size=0) as ws,
        ):
            cdp = _Protocol(ws)
            reader = asyncio.create_task(cdp.read())
            target = (await cdp.call("Target.createTarget", url="about:blank"))["targetId"]
            session = (await cdp.call("Target.attachToTarget", targetId=target, flatten=True))["sessionId"]
            for domain in ("Runtime", "Log", "Page"):
                await cdp.call(f"{domain}.enable", session)
            await cdp.call("Page.navigate", session, url=url)
            await cdp.wait_for("Page.loadEventFired", timeout)
            page = Page()
            for name, expression in expressions.items():
                result = await cdp.call("Runtime.evaluate", session, expression=expression, returnByValue=True)
                if "exceptionDetails" in result:
                    d = result["exceptionDetails"]
                    why = d.get("exception", {}).get("description") or d.get("text")
                    page.errors.append(f"evaluating {name}: {why}")
                page.values[name] = result.get("result", {}).get("value")
            await asyncio.sleep(0.2)  # errors reported just after the last evaluation
            if screenshot is not None:
                shot = await cdp.call("Page.captureScreenshot", session, format="png", captureBeyondViewport=True)
                screenshot.write_bytes(base64.b64decode(shot["data"]))
            page.errors += _errors(cdp.events)
            reader.cancel()
            return page
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()
        shutil.rmtree(profile, ignore_errors=True)


def load(
    url: str,
    expressions: dict[str, str],
    browser: str | None = None,
    timeout: float = 30,
    screenshot: Path | None = None,
) -> Page:
    """Open url in a fresh headless browser, evaluate the expressions in order; see the module doc."""
    browser = browser or find()
    if browser is None:
        raise RuntimeError("no Chromium found; run scripts/chromium.sh or set RELAYCHAOS_CHROMIUM")
    return asyncio.run(_load(browser, url, expressions, timeout, screenshot))
