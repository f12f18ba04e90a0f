"""Train the Java relay's class-data-sharing archive (build/relay.jsa): its JVM then starts faster.

    .venv/bin/python scripts/java_cds.py relay_under_test/java

Run by scripts/bootstrap.sh after it builds build/relay.jar (and installs relaychaos into .venv).
It starts `serve` as relay.toml says, but with -XX:ArchiveClassesAtExit instead of
-XX:SharedArchiveFile, through the harness's one launcher (relaychaos.stack.launch) with the
sandbox off, so that the archive lands in the relay's own folder (the bundled Java relay is the
project's own code, built here), against the account-system fixture; sends it a transfer, its duplicate and
a malformed request; and stops it with SIGTERM: the JVM writes every class it loaded into the
archive as it exits. A later JVM maps them instead of loading and verifying each class again
(-Xshare:auto: where the archive is missing or was made by another JDK, it is silently unused).
Exit 1, with the relay's log, if the archive was not written.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import sys
import tempfile
import urllib.error
import urllib.request
from pathlib import Path

from relaychaos.ports import lease_port, release_port
from relaychaos.sandbox.policy import Sandbox, WorkingCopy
from relaychaos.stack import launch
from relaychaos.stack.account_system import AccountSystem
from relaychaos.stack.manifest import load
from relaychaos.stack.processes import wait_http_ok

ARCHIVE = "build/relay.jsa"


def post(url: str, payload: bytes) -> None:
    request = urllib.request.Request(url, data=payload, headers={"Content-Type": "application/json"})
    with contextlib.suppress(urllib.error.HTTPError):  # E400 answers HTTP 400: its classes are loaded all the same
        urllib.request.urlopen(request, timeout=10).read()


def main(folder: Path) -> int:
    folder = folder.resolve()
    manifest = load(folder / "relay.toml")
    argv = [a for a in manifest.commands["serve"] if not a.startswith("-XX:SharedArchiveFile=")]
    argv.insert(1, f"-XX:ArchiveClassesAtExit={ARCHIVE}")
    training = dataclasses.replace(manifest, commands={**manifest.commands, "serve": tuple(argv)})
    (folder / ARCHIVE).unlink(missing_ok=True)
    (folder / "tmp").mkdir(exist_ok=True)
    with tempfile.TemporaryDirectory() as work:
        account, port = AccountSystem.start(Path(work)), lease_port()
        try:
            ledger = Path(work) / "ledger.sqlite"
            account.reset(ledger_path=ledger, accounts={"alice": 100, "bob": 0})
            contract = {
                "RELAY_HOST": "127.0.0.1",
                "RELAY_PORT": str(port),
                "ACCOUNT_URL": account.url,
                "LEDGER_PATH": str(ledger),
                "ACCOUNT_TIMEOUT_MS": "2000",
            }
            relay = launch.start(
                Sandbox.create("off"),
                training,
                "serve",
                copy=WorkingCopy(folder, folder),
                contract=contract,
                log_path=Path(work) / "serve.log",
                ledger_dir=Path(work),
                tmp_dir=None,
                connect=(account.port,),
                port=port,
            )
            why = wait_http_ok(f"http://127.0.0.1:{port}/health", timeout_s=30, child=relay)
            if why is None:
                transfer = json.dumps({"guid": "cds-1", "from": "alice", "to": "bob", "amount": 1}).encode()
                for payload in (transfer, transfer, b"[]"):
                    post(f"http://127.0.0.1:{port}/transfer", payload)
            relay.stop(grace_s=60)  # SIGTERM: the JVM exits normally, writing the archive
            log = relay.tail(30)
        finally:
            account.close()
            release_port(port)
    if not (folder / ARCHIVE).is_file():
        print(f"java_cds: no {ARCHIVE} was written{f' (serve {why})' if why else ''}; its log:\n{log}", file=sys.stderr)
        return 1
    print(f"java_cds: {folder / ARCHIVE} ({(folder / ARCHIVE).stat().st_size // 1024} KiB)")
    return 0


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1])))
