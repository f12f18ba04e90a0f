"""Train the Java relay's class-data-sharing archive (build/relay.jsa): its JVM then starts faster.

    python scripts/java_cds.py relay_under_test/java

Run by scripts/bootstrap.sh after it builds build/relay.jar. It starts `serve` as relay.toml
says, but with -XX:ArchiveClassesAtExit instead of -XX:SharedArchiveFile, sends it a health
check, a transfer (answered 0000 by a stand-in account system here), its duplicate and a
malformed request, and stops it with SIGTERM: the JVM writes every class it loaded into the
archive as it exits. A later JVM maps them instead of loading and verifying each class again
(-Xshare:auto: where the archive is missing or was made by another JDK, it is silently unused).
Exit 1, with the relay's output, if the archive was not written.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ARCHIVE = "build/relay.jsa"


class Account(BaseHTTPRequestHandler):
    """The account system's two calls, enough for the relay to load the classes it uses to reach it."""

    def do_POST(self) -> None:  # noqa: N802 (the stdlib's name)
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self._answer(200, {"guid": body["guid"], "code": "0000", "message": "applied"})

    def do_GET(self) -> None:  # noqa: N802
        self._answer(404, {"guid": self.path.rsplit("/", 1)[-1], "found": False})

    def _answer(self, status: int, obj: dict) -> None:
        data = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args) -> None:
        pass


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def post(url: str, payload: bytes) -> None:
    request = urllib.request.Request(url, data=payload, headers={"Content-Type": "application/json"})
    try:
        urllib.request.urlopen(request, timeout=10).read()
    except urllib.error.HTTPError:
        pass  # E400 answers HTTP 400: the classes behind it are loaded all the same


def main(folder: Path) -> int:
    serve = tomllib.loads((folder / "relay.toml").read_text())["commands"]["serve"]
    argv = [a for a in serve if not a.startswith("-XX:SharedArchiveFile=")]
    argv.insert(1, f"-XX:ArchiveClassesAtExit={ARCHIVE}")
    (folder / ARCHIVE).unlink(missing_ok=True)
    account = ThreadingHTTPServer(("127.0.0.1", 0), Account)
    threading.Thread(target=account.serve_forever, daemon=True).start()
    port = free_port()
    with tempfile.TemporaryDirectory() as ledger:
        env = {**os.environ, "RELAY_HOST": "127.0.0.1", "RELAY_PORT": str(port),
               "ACCOUNT_URL": f"http://127.0.0.1:{account.server_port}",
               "LEDGER_PATH": str(Path(ledger) / "ledger.sqlite"), "ACCOUNT_TIMEOUT_MS": "2000"}
        (folder / "tmp").mkdir(exist_ok=True)
        relay = subprocess.Popen(argv, cwd=folder, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        try:
            base = f"http://127.0.0.1:{port}"
            deadline = time.monotonic() + 30
            while True:
                try:
                    urllib.request.urlopen(base + "/health", timeout=1).read()
                    break
                except OSError:
                    if relay.poll() is not None or time.monotonic() > deadline:
                        raise SystemExit(f"java_cds: serve did not start:\n{relay.stdout.read().decode()}")
                    time.sleep(0.05)
            transfer = json.dumps({"guid": "cds-1", "from": "alice", "to": "bob", "amount": 1}).encode()
            for payload in (transfer, transfer, b"[]"):
                post(base + "/transfer", payload)
        finally:
            relay.send_signal(signal.SIGTERM)
            out, _ = relay.communicate(timeout=60)
            account.shutdown()
    if not (folder / ARCHIVE).is_file():
        print(f"java_cds: no {ARCHIVE} was written; the JVM said:\n{out.decode(errors='replace')}", file=sys.stderr)
        return 1
    print(f"java_cds: {folder / ARCHIVE} ({(folder / ARCHIVE).stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
