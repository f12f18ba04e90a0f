"""A real PostgreSQL for a run: the OS package's server in a throw-away cluster, one database per relay.

    server = Postgres.start(log_dir)          # initdb + postgres on a leased loopback port
    url = server.create_database()           # postgresql://postgres@127.0.0.1:PORT/relay_<hex>
    server.close()                           # stops the server and deletes the cluster

The server runs as the `postgres` user when the harness is root (PostgreSQL refuses root), without
fsync (a test cluster: relays are killed, the server is not), and listens on 127.0.0.1 only. Every
login over TCP needs a password (scram-sha-256): the superuser's is the harness's alone, and each
relay's database has an owner role of its own that is no superuser and can connect nowhere else. Where
no server binaries are installed, `start` says so with the fix (scripts/bootstrap.sh installs them).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import secrets
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from relaychaos.contract import LEDGER_COLUMNS
from relaychaos.errors import FixtureError
from relaychaos.ports import lease_port, release_port
from relaychaos.stack import ledger_file
from relaychaos.stack.processes import Child, spawn

if TYPE_CHECKING:
    from psycopg.sql import Composable, Composed

START_TIMEOUT_S = 30.0
ROLE_CONNECTIONS = 32  # sessions a relay's role may hold at once: a relay cannot take the cluster's slots
# What a relay's SQL may take of the server, which runs outside its sandbox: a session whose client is gone
# ends within a second (a killed relay leaves nothing running), no parallel workers beyond its own backend,
# temporary files bounded.
LIMITS = ("client_connection_check_interval=1000", "max_parallel_workers_per_gather=0", "temp_file_limit=262144")
OVER = "relaychaos: over the value bound"  # the column naming a value the bounded read left out
SEARCH = ("/usr/lib/postgresql/*/bin", "/usr/local/pgsql/bin")
INSTALL = "install the server: `apt-get install -y postgresql` (scripts/bootstrap.sh does this where it can)"


def binaries() -> Path:
    """The folder holding initdb and postgres; FixtureError with the fix when there is none."""
    found = shutil.which("initdb")
    if found and Path(found).resolve().with_name("postgres").exists():
        return Path(found).resolve().parent
    for pattern in SEARCH:
        for folder in sorted(glob.glob(pattern), reverse=True):
            if (Path(folder) / "initdb").exists() and (Path(folder) / "postgres").exists():
                return Path(folder)
    raise FixtureError("no PostgreSQL server on this machine (initdb and postgres not found)", fix=INSTALL)


def _as_user() -> tuple[list[str], pwd.struct_passwd | None]:
    """The argv prefix that drops root to the `postgres` (else `nobody`) user, and that user; nothing when not root."""
    if os.geteuid() != 0:
        return [], None
    for name in ("postgres", "nobody"):
        with contextlib.suppress(KeyError):
            user = pwd.getpwnam(name)
            prefix = ["setpriv", f"--reuid={user.pw_uid}", f"--regid={user.pw_gid}", "--clear-groups", "--"]
            return prefix, user
    raise FixtureError("running as root and neither a `postgres` nor a `nobody` user exists", fix=INSTALL)


class Postgres:
    """A running throw-away cluster and its superuser URL."""

    def __init__(self, child: Child, port: int, data: Path, password: str):
        self.child, self.port, self.data = child, port, data
        self.url = f"postgresql://postgres:{password}@127.0.0.1:{port}/postgres"  # the harness's alone

    @classmethod
    def start(cls, log_dir: Path) -> Postgres:
        bin_dir = binaries()
        prefix, user = _as_user()
        data = Path(tempfile.mkdtemp(prefix="relaychaos-pg-"))
        if user is not None:
            os.chown(data, user.pw_uid, user.pw_gid)
        cluster, password = data / "cluster", secrets.token_hex(16)
        pwfile = data / "pw"
        pwfile.write_text(password + "\n")
        if user is not None:
            os.chown(pwfile, user.pw_uid, user.pw_gid)
        pwfile.chmod(0o600)
        init = subprocess.run(
            [*prefix, str(bin_dir / "initdb"), "-D", str(cluster), "-U", "postgres", "-E", "UTF8"]
            + [
                "--auth-host=scram-sha-256",
                "--auth-local=peer",
                f"--pwfile={pwfile}",
                "--no-sync",
                "--no-instructions",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        pwfile.unlink()
        if init.returncode != 0:
            shutil.rmtree(data, ignore_errors=True)
            raise FixtureError(
                f"initdb failed (exit {init.returncode})",
                fix="see its output below; " + INSTALL,
                details=(init.stdout + init.stderr)[-2000:],
            )
        port = lease_port()
        argv = [*prefix, str(bin_dir / "postgres"), "-D", str(cluster), "-p", str(port), "-h", "127.0.0.1"]
        argv += ["-k", str(data), "-c", "fsync=off", "-c", "synchronous_commit=off", "-c", "full_page_writes=off"]
        argv += [f"-c{setting}" for setting in LIMITS]
        child = spawn("postgres", argv, log_path=log_dir / f"postgres-{port}.log", cwd=data)
        server = cls(child, port, data, password)
        try:
            server._wait_ready()
        except BaseException:
            server.close()
            raise
        return server

    def _wait_ready(self) -> None:
        import psycopg  # lazy: only a PostgreSQL ledger needs psycopg

        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                with psycopg.connect(self.url, connect_timeout=2):
                    return
            except psycopg.OperationalError as e:
                if not self.child.alive() or time.monotonic() > deadline:
                    raise FixtureError(
                        f"PostgreSQL did not accept connections on 127.0.0.1:{self.port} "
                        f"({'it exited' if not self.child.alive() else f'after {START_TIMEOUT_S:.0f} s'}): {e}",
                        fix=f"see its log {self.child.log_path}",
                        details=self.child.tail(),
                    ) from None
            time.sleep(0.1)

    def create_database(self) -> str:
        """A fresh empty database for one relay (or two sharing one ledger), owned by a role of its own: the URL
        that role logs in with.

        The role is no superuser and may connect to its database alone: relay code is untrusted, and a
        superuser could run programs on this machine (COPY ... TO PROGRAM) outside the relay's sandbox.
        """
        import psycopg  # lazy: only a PostgreSQL ledger needs psycopg
        from psycopg import sql  # lazy: only a PostgreSQL ledger needs psycopg

        name, password = f"relay_{secrets.token_hex(6)}", secrets.token_hex(16)
        ident = sql.Identifier(name)
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(
                sql.SQL(
                    "CREATE ROLE {} LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION CONNECTION LIMIT {} "
                    "PASSWORD {}"
                ).format(ident, sql.Literal(ROLE_CONNECTIONS), sql.Literal(password))
            )
            conn.execute(sql.SQL("CREATE DATABASE {} OWNER {}").format(ident, ident))
            conn.execute(sql.SQL("REVOKE CONNECT, TEMPORARY ON DATABASE {} FROM PUBLIC").format(ident))
            conn.execute("REVOKE CONNECT, TEMPORARY ON DATABASE postgres, template1 FROM PUBLIC")
        return f"postgresql://{name}:{password}@127.0.0.1:{self.port}/{name}"

    def end_sessions(self, database_url: str) -> None:
        """End every session of the role a database URL logs in with (create_database's): what a relay left."""
        import psycopg  # lazy: only a PostgreSQL ledger needs psycopg

        role = urlsplit(database_url).username
        deadline = time.monotonic() + 5.0
        with psycopg.connect(self.url, autocommit=True) as conn:
            while True:  # a terminated backend leaves pg_stat_activity a moment later: until none is left
                ended = conn.execute(
                    "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity WHERE usename = %s", (role,)
                ).fetchone()
                if not ended or not ended[0] or time.monotonic() > deadline:
                    return
                time.sleep(0.05)

    def close(self) -> None:
        """Stop the server and delete the cluster."""
        self.child.stop(grace_s=5.0)
        release_port(self.port)
        shutil.rmtree(self.data, ignore_errors=True)


def unreachable(url: str) -> str | None:
    """Why the database at `url` cannot be reached (None: it can)."""
    import psycopg  # lazy: only a PostgreSQL ledger needs psycopg

    try:
        with psycopg.connect(url, connect_timeout=3):
            return None
    except psycopg.Error as e:
        return " ".join(str(e).split())


def mapping_problem(url: str, table: str, columns: tuple[str, ...]) -> str | None:
    """Why `SELECT columns FROM table` fails on the database at `url` (None: the mapping reads)."""
    import psycopg  # lazy: only a PostgreSQL ledger needs psycopg
    from psycopg import sql  # lazy: only a PostgreSQL ledger needs psycopg

    query = sql.SQL("SELECT {} FROM {} LIMIT 0").format(
        sql.SQL(", ").join(sql.Identifier(c) for c in columns), sql.Identifier(*table.split("."))
    )
    try:
        with psycopg.connect(url, connect_timeout=3) as conn:
            conn.execute(query)
            return None
    except psycopg.Error as e:
        return " ".join(str(e).split())


def columns(url: str, table: str) -> list[str]:
    """The columns of `table` in the database at `url`, in order, read in a read-only session (psycopg.Error when
    the table cannot be read)."""
    import psycopg  # lazy: only a PostgreSQL ledger needs psycopg

    options = "-c default_transaction_read_only=on -c statement_timeout=5000"
    with psycopg.connect(url, autocommit=True, connect_timeout=5, options=options) as conn:
        cur = conn.execute(_select_none(table))
        return [d.name for d in cur.description or ()]


def rows(
    url: str,
    table: str,
    key: str,
    suffix: str | None = None,
    columns: tuple[str, ...] | None = None,
    most: int | None = None,
) -> dict[str, dict]:
    """The ledger table's rows by key (only keys ending in `suffix`, if given), read in a read-only session with a
    statement time-out: a course relay's contract table kept in PostgreSQL (the contract's columns it has, as
    relaychaos.stack.ledger_file.rows reads SQLite's), or only `columns` of a service's own table. Bounded as
    ledger_file's reads are: more than `most` rows, a value over its VALUE_BYTES, or rows over its ROWS_BYTES in
    all, is never taken in (psycopg.DataError names it). psycopg.Error when it cannot be read."""
    import psycopg  # lazy: only a PostgreSQL ledger needs psycopg
    from psycopg import sql  # lazy: only a PostgreSQL ledger needs psycopg
    from psycopg.rows import dict_row  # lazy: only a PostgreSQL ledger needs psycopg

    where: Composable = sql.SQL("")
    params: tuple = ()
    if suffix is not None:
        where = sql.SQL(" WHERE right({}::text, %s) = %s").format(sql.Identifier(key))
        params = (len(suffix), suffix)
    options = "-c default_transaction_read_only=on -c statement_timeout=5000"
    with psycopg.connect(url, autocommit=True, connect_timeout=5, options=options, row_factory=dict_row) as conn:
        if columns:
            names = list(dict.fromkeys([key, *columns]))
        else:
            present = {d.name for d in conn.execute(_select_none(table)).description or ()}
            names = [c for c in LEDGER_COLUMNS if c in present]
        found: dict[str, dict] = {}
        spent = 0
        for row in conn.cursor().stream(_bounded_select(table, names, where), params):  # a row at a time
            over = row.pop(OVER)
            spent += ledger_file.ROW_BYTES + sum(len(v) for v in row.values() if isinstance(v, (str, bytes)))
            if over or spent > ledger_file.read_budget(most):
                what = (
                    f"a value of over {ledger_file.VALUE_BYTES >> 10} KiB in column `{over}`"
                    if over
                    else f"rows of more than {ledger_file.read_budget(most) / 2**20:g} MiB"
                )
                raise psycopg.DataError(
                    f"the ledger's table {table} holds {what} (row {len(found) + 1} of those read): the harness reads "
                    "no more (a transfer's row is under 2 KB)"
                )
            found[str(row[key])] = row
            if most is not None and len(found) > most:
                raise psycopg.DataError(ledger_file.too_many(f"table {table}", most, suffix))
        return found


def _select_none(table: str) -> Composed:
    from psycopg import sql  # lazy: only a PostgreSQL ledger needs psycopg

    return sql.SQL("SELECT * FROM {} LIMIT 0").format(sql.Identifier(*table.split(".")))


def _bounded_select(table: str, names: list[str], where: Composable) -> Composed:
    """SELECT of `names`, each value over ledger_file.VALUE_BYTES (as text) left out by the server, and OVER: the
    name of the first column whose value was left out (NULL: none)."""
    from psycopg import sql  # lazy: only a PostgreSQL ledger needs psycopg

    limit = sql.Literal(ledger_file.VALUE_BYTES)
    longer = [sql.SQL("octet_length({}::text) > {}").format(sql.Identifier(n), limit) for n in names]
    kept = [
        sql.SQL("CASE WHEN {} THEN NULL ELSE {} END AS {}").format(too, sql.Identifier(n), sql.Identifier(n))
        for n, too in zip(names, longer, strict=True)
    ]
    which = sql.SQL("CASE {} END AS {}").format(
        sql.SQL(" ").join(
            sql.SQL("WHEN {} THEN {}").format(too, sql.Literal(n)) for n, too in zip(names, longer, strict=True)
        ),
        sql.Identifier(OVER),
    )
    return sql.SQL("SELECT {}, {} FROM {}{}").format(
        sql.SQL(", ").join(kept), which, sql.Identifier(*table.split(".")), where
    )
