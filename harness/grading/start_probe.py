"""Before a submission is graded: does its `serve` start and answer /health at all?

    why = probe(manifest, folder, opts)   # None: it started; else what a student reads, its output's tail included

One start in the sandbox, as every scenario would make it, with no account system behind (serve
needs none to answer /health). A relay that exits, crashes or never answers is graded as not
gradable at once, with the last lines of its own output (the SyntaxError, the missing module),
instead of after every scenario has shown the same; a relay that starts costs one start more. A
relay whose ledger is a PostgreSQL database is not probed: its serve needs the database each
scenario's stack gives it, so its first scenario is its probe. What serve printed (and a diagnosis's
retry) is kept with the submission's other relay logs, in logs/start-probe/.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from relaychaos.errors import RelayError
from relaychaos.reports.student_text import tail
from relaychaos.run_folder import LOGS
from relaychaos.sandbox.levels import Limits
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import manifest
from relaychaos.stack.processes import tail_text
from relaychaos.stack.supervisor import Supervisor

TAIL_LINES = 12


def probe(
    manifest_path: Path, folder: Path, sandbox_mode: str, sandbox_limit: str | None, log_budget: Path | None
) -> str | None:
    """None when serve answered /health; else why not, ending with the tail of what serve printed."""
    loaded = manifest.load(manifest_path)
    if loaded.profile.ledger.kind == "postgresql":
        return None
    sandbox = Sandbox.create(sandbox_mode, Limits().with_overrides(sandbox_limit), log_budget=log_budget)
    work = folder / LOGS / "start-probe"
    shutil.rmtree(work, ignore_errors=True)  # a regrade's probe starts from nothing
    work.mkdir(parents=True)
    try:
        ledger = sandbox.ledger_dir(work) / "ledger.sqlite"
        supervisor = Supervisor(
            loaded,
            workdir=work,
            account_url=f"http://{sandbox.account_host}:9",
            account_timeout_ms=1000,
            ledger_path=ledger,
            sandbox=sandbox,
        )
        try:
            supervisor.start("a")
            return None
        except RelayError as e:
            said = tail(
                tail_text(work / "relay-a.log") if (work / "relay-a.log").exists() else "",
                TAIL_LINES,
            )
            what = e.what.removesuffix("its log says:").rstrip(";: ")
            fix = (e.fix or "").removesuffix("its log says:").rstrip(";: ")
            return (
                f"{what}"
                + (f" ({fix})" if fix else "")
                + (f"; the last lines it printed are below\n{said}" if said else "; it printed nothing")
            )
        finally:
            supervisor.close()
            sandbox.discard(ledger.parent)
    finally:
        sandbox.close()
