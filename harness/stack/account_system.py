"""The harness's handle on the account-system fixture: start it, then drive its control API.

One fixture process serves many tests in turn (each test resets it); its
statistics are the ground truth of what was debited, whatever the relay says.
It listens on two ports: `port`/`url` serve contract section 2 alone (the Toxiproxy
proxy points there, so that is all a relay can reach), `control_port`/`control_url`
serve /_control/, which refuses any request without this client's random token.
The client remembers every fault it set and counts its control writes, so
`audit()` can tell whether anyone else changed the fixture's faults.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import subprocess
import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import requests

from relaychaos.errors import FixtureError
from relaychaos.fixtures.account_system.faults import Faults
from relaychaos.ports import lease_port, release_port
from relaychaos.stack.api_profile import Downstream, Ledger
from relaychaos.stack.processes import Child, spawn, wait_http_ok

START_TIMEOUT_S = 15.0
STATS_TIMEOUT_S = 300.0
TOKEN_ENV = "RELAYCHAOS_CONTROL_TOKEN"
TOKEN_HEADER = "X-Relaychaos-Token"


class AccountSystem:
    """A running fixture process (`python -m relaychaos.fixtures.account_system`) and its control client."""

    def __init__(self, child: Child, port: int, control_port: int, token: str, shape: Downstream | None = None):
        self.child, self.port, self.control_port = child, port, control_port
        self.shape = shape or Downstream()  # the HTTP shape its public port speaks
        self.url = f"http://127.0.0.1:{port}"
        self.control_url = f"http://127.0.0.1:{control_port}"
        self._token = token  # for the project's own tests, which play a third party holding it
        self._http = requests.Session()
        self._http.trust_env = False  # its control port is on this machine: no proxy, netrc or CA bundle to look up
        self._http.headers[TOKEN_HEADER] = token
        self._writes = 0  # state-changing control calls this client made (and the fixture answered)
        self._faults = Faults()  # the faults as this client set them
        self.why_gone: Callable[[], str] = lambda: ""  # what else is known of its end (run.services: its memory group)

    @classmethod
    def start(cls, log_dir: Path, shape: Downstream | None = None, public_host: str = "127.0.0.1") -> AccountSystem:
        """Spawn a fixture on two free ports with a fresh token (in its environment, not its argv), speaking
        contract section 2 or a team's PSP `shape`; its public port on `public_host` (a Toxiproxy on another host
        reaches it there), its control port on loopback."""
        port, control_port = lease_port(), lease_port()
        try:
            return cls._spawn(log_dir, port, control_port, shape, public_host)
        except BaseException:
            release_port(port)
            release_port(control_port)
            raise

    @classmethod
    def _spawn(
        cls, log_dir: Path, port: int, control_port: int, shape: Downstream | None, public_host: str
    ) -> AccountSystem:
        token = secrets.token_hex(16)
        argv = [
            sys.executable,
            "-m",
            "relaychaos.fixtures.account_system",
            "--port",
            str(port),
            "--control-port",
            str(control_port),
            "--public-host",
            public_host,
        ]
        if shape is not None and not shape.course:
            argv += ["--shape", shape.to_json()]
        child = spawn(
            "account-system",
            argv,
            log_path=log_dir / f"account-system-{port}.log",
            cwd=log_dir,
            env={**os.environ, TOKEN_ENV: token},
        )
        # the fixture opens its public port before its control port: a control answer means both listen
        why = wait_http_ok(
            f"http://127.0.0.1:{control_port}/_control/health",
            timeout_s=START_TIMEOUT_S,
            child=child,
            headers={TOKEN_HEADER: token},
        )
        if why:
            child.kill()
            raise FixtureError(
                f"the account-system fixture {why}",
                fix="run `bash scripts/bootstrap.sh` so aiohttp is installed, and read its log",
                details=child.tail(),
            )
        return cls(child, port, control_port, token, shape)

    def close(self) -> None:
        self._http.close()
        self.child.stop()
        release_port(self.port)
        release_port(self.control_port)

    def _call(
        self,
        method: str,
        path: str,
        *,
        json: object = None,
        params: Mapping[str, str | float] | None = None,
        timeout: float = 10,
    ) -> dict:
        """The fixture's JSON answer to a control call (`json`: the body, if any)."""
        try:
            resp = self._http.request(method, self.control_url + path, params=params, json=json, timeout=timeout)
        except requests.RequestException as e:
            raise FixtureError(
                f"the account-system fixture did not answer {method} {path}: {e}{self._gone()}",
                details=self.child.tail(),
            ) from None
        if resp.status_code not in (200, 408):
            raise FixtureError(
                f"the account-system fixture answered {method} {path} with HTTP {resp.status_code}: {resp.text[:300]}",
                details=self.child.tail(),
            )
        return resp.json()

    def _gone(self) -> str:
        """'' while the fixture runs; once it has exited, how (and what else is known of it)."""
        with contextlib.suppress(subprocess.TimeoutExpired):  # a process killed as it answered is gone in a moment
            self.child.popen.wait(timeout=1.0)
        code = self.child.popen.poll()
        return "" if code is None else f" (it has exited with status {code}{self.why_gone()})"

    def _write(self, method: str, path: str, json: object = None) -> dict:
        """A control call that changes the fixture's state, counted so audit() can compare."""
        answer = self._call(method, path, json=json)
        self._writes += 1
        return answer

    # -- control -----------------------------------------------------------------------
    def reset(
        self,
        *,
        ledger_path: Path | str | None = None,
        accounts: dict[str, int] | None = None,
        ledger_url: str | None = None,
        ledger: Ledger | None = None,
    ) -> None:
        """Forget all calls, balances and faults; peek at the SQLite ledger_path from now on, or at the PostgreSQL
        database ledger_url through `ledger`'s mapping of the team's table."""
        postgres: dict | None = None
        if ledger_url is not None and ledger is not None:
            postgres = {"url": ledger_url, "table": ledger.table, "key": ledger.key, "status": ledger.status}
            postgres["statuses"] = ledger.statuses
        self._write(
            "POST",
            "/_control/reset",
            json={
                "ledger_path": str(ledger_path) if ledger_path else None,
                "ledger_postgres": postgres,
                "accounts": accounts or {},
            },
        )
        self._faults = Faults()

    def stats(self) -> dict:
        """{'balances', 'guids': {guid: {calls, debits, codes, first_code}}, 'calls': [...], 'faults'}.

        After a soak the call log is hundreds of thousands of calls long: it gets STATS_TIMEOUT_S to come."""
        return self._call("GET", "/_control/stats", timeout=STATS_TIMEOUT_S)

    def set_faults(self, **spec: float | list[str]) -> None:
        """Merge server-side faults: delay_ms and e500_next replace; e500_guids, hold_guids, e500_once (lists) add."""
        merged = self._faults.merged(spec)  # a spec of the wrong shape fails here, before the fixture sees it
        self._write("POST", "/_control/faults", json=spec)
        self._faults = merged

    def clear_faults(self) -> None:
        """Remove every fault and release every held GUID."""
        self._write("DELETE", "/_control/faults")
        self._faults = Faults()

    def release(self, guids: list[str] | None = None) -> None:
        """Let held GUIDs (all when None) be processed; returns once they have been. The faults as set stay."""
        self._write("POST", "/_control/release", json={"guids": guids} if guids is not None else {})

    def wait_calls(self, guid: str, count: int = 1, timeout_s: float = 5.0) -> int:
        """Block until `count` calls for guid have reached the account system; returns how many did."""
        return self._call(
            "GET",
            "/_control/wait",
            params={"guid": guid, "count": count, "timeout_s": timeout_s},
            timeout=timeout_s + 5,
        )["calls"]

    # -- tamper evidence ---------------------------------------------------------------
    def audit(self) -> list[str]:
        """How the fixture's faults and control-write count differ from what this client did; [] when they agree.

        One small GET. Calls consuming e500_next or e500_once and releases do not count as differences:
        the fixture reports the faults as set, not as consumed since.
        """
        seen = self._call("GET", "/_control/faults")
        out, counts = (
            [],
            (
                f"the account system received {seen['writes']} control "
                f"write{'' if seen['writes'] == 1 else 's'}, the harness made {self._writes}"
            ),
        )
        if seen["writes"] > self._writes:
            out.append(f"{counts}: someone else changed its faults")
        elif seen["writes"] < self._writes:
            out.append(f"{counts}: some were lost (was the fixture restarted?)")
        for name, mine in self._faults.normalized().items():
            theirs = seen["set"].get(name)
            if theirs != mine:
                out.append(f"{name} is {_show(theirs)}, the harness set {_show(mine)}")
        return out


def _show(value: object) -> str:
    """A fault's value for a person: 200 not 200.0, a GUID list as [a, b]."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    if isinstance(value, list):
        return "[" + ", ".join(map(str, value)) + "]"
    return str(value)
