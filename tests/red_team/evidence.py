"""What every red-team relay shares: its evidence lines, the hooks it attacks from, a few raw system calls.

An attack relay is the reference relay plus one attack (tests/red_team/<attack>.py). It is built by
tests/test_red_team.py as a module beside the bundled Python relays (`python run.py <attack> COMMAND`),
with this file copied beside it, and may declare at its top:

    ATTEMPTS = ("mptcp", "sctp", ...)        # every attempt it reports, at least once per grade
    COMMANDS = {"resolve": ["./x", ...]}     # manifest commands other than `python run.py <attack> CMD`
    LIMITS = {"ready_timeout_s": 3}          # the manifest's [limits]

Evidence, one line per attempt, flushed, read back from the relay's logs in the grade's output:

    ATTACK <attack>/<attempt>: ACHIEVED <what it got>
    ATTACK <attack>/<attempt>: refused <errno or exception>

An attempt that fails in a way the attack did not foresee (a bug of the attack, not a refusal by the
sandbox) says `refused BUG ...`: the test counts that as a broken attack, never as a refusal. Every
process also says once who it is (`RED-TEAM <attack> ...`): the test finds the slots a grade used there.

Stdlib only: some attacks run it under the machine's own Python (argv0_swap) or before the relay's
imports. Imported as `relay_under_test.evidence` by the attack modules (or by path, as `evidence`).
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import json
import os
import threading
import time
import traceback

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long
_print_lock = threading.Lock()
CANARY_BANNER = b"RED-TEAM-CANARY"  # what the test's listeners on the machine answer
HOST_RANGE = (20000, 29999)  # the harness's ports (relaychaos.ports.DEFAULT_RANGE)
CONTRACT_ENV = {
    "RELAY_HOST",
    "RELAY_PORT",
    "ACCOUNT_URL",
    "LEDGER_PATH",
    "ACCOUNT_TIMEOUT_MS",
    "PATH",
    "HOME",
    "LANG",
    "LC_CTYPE",
    "TMPDIR",
}


class Refused(Exception):
    """The attempt was stopped; its message says by what."""


def emit(line: str) -> None:
    """One line on stdout, written at once (also from forked children and threads)."""
    data = (line.rstrip("\n") + "\n").encode(errors="replace")
    with _print_lock, contextlib.suppress(OSError):
        os.write(1, data)


def describe(e: BaseException) -> str:
    if isinstance(e, OSError) and e.errno is not None:
        where = f" {e.filename}" if getattr(e, "filename", None) else ""
        return f"{errno.errorcode.get(e.errno, e.errno)} ({e.strerror}){where}"
    return f"{type(e).__name__}: {e}"


class Attack:
    """The evidence of one attack relay: `run(attempt, fn)` reports one attempt."""

    def __init__(self, name: str):
        self.name = name

    def achieved(self, attempt: str, detail: str) -> None:
        emit(f"ATTACK {self.name}/{attempt}: ACHIEVED {_one_line(detail)}")

    def refused(self, attempt: str, detail: str) -> None:
        emit(f"ATTACK {self.name}/{attempt}: refused {_one_line(detail)}")

    def run(self, attempt: str, fn, *args):
        """Run fn(*args): it returns what it got (ACHIEVED) or raises Refused/OSError (refused). A return of
        None means refused with no detail. Anything else raised is a bug of the attack (`refused BUG`)."""
        try:
            got = fn(*args)
        except Refused as e:
            self.refused(attempt, str(e))
            return None
        except OSError as e:
            self.refused(attempt, describe(e))
            return None
        except Exception as e:  # noqa: BLE001 - the attack's own bug: said, never taken for a refusal
            tb = traceback.format_exc().strip().splitlines()[-3:]
            self.refused(attempt, f"BUG {describe(e)} | {' | '.join(tb)}")
            return None
        if got is None or got is False:
            self.refused(attempt, "nothing to show")
            return None
        self.achieved(attempt, str(got))
        return got

    def background(self, fn, *args, delay_s: float = 0.0) -> threading.Thread:
        """Run fn(*args) in a daemon thread (after delay_s)."""

        def go():
            if delay_s:
                time.sleep(delay_s)
            try:
                fn(*args)
            except Exception as e:  # noqa: BLE001
                emit(f"ATTACK {self.name}/thread: refused BUG {describe(e)}")

        t = threading.Thread(target=go, daemon=True, name=f"attack-{self.name}")
        t.start()
        return t


def _one_line(text: str) -> str:
    return " ".join(str(text).split())[:2000]


def whoami(attack: str, command: str) -> None:
    """The line the test reads to know which slot (uid, network) ran this command."""
    env = os.environ
    emit(
        "RED-TEAM "
        + json.dumps(
            {
                "attack": attack,
                "command": command,
                "pid": os.getpid(),
                "uid": os.getuid(),
                "account_url": env.get("ACCOUNT_URL"),
                "ledger": env.get("LEDGER_PATH"),
                "port": env.get("RELAY_PORT"),
                "cwd": os.getcwd(),
            },
            sort_keys=True,
        )
    )


def command_of(argv: list[str]) -> str:
    return argv[0] if argv else ""


# -- where things are ------------------------------------------------------------------------------
def slot_number() -> int | None:
    """The sandbox slot, from ACCOUNT_URL (http://10.213.N.1:P); None outside a slot network."""
    url = os.environ.get("ACCOUNT_URL", "")
    host = url.split("//", 1)[-1].split(":", 1)[0]
    parts = host.split(".")
    return int(parts[2]) if len(parts) == 4 and parts[:2] == ["10", "213"] else None


def account_port() -> int:
    return int(os.environ["ACCOUNT_URL"].rsplit(":", 1)[1].split("/")[0])


def account_host() -> str:
    return os.environ["ACCOUNT_URL"].split("//", 1)[1].rsplit(":", 1)[0]


def ledger_dir() -> str:
    return os.path.dirname(os.environ["LEDGER_PATH"])


def scratch(name: str) -> str:
    """A path in the relay's own /tmp (shared by the commands of one stack)."""
    return os.path.join("/tmp", name)


def first_time(key: str) -> bool:
    """True once per stack (a marker in /tmp made atomically)."""
    try:
        os.close(os.open(scratch(f"rt-once-{key}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        return True
    except FileExistsError:
        return False


# -- looking around the filesystem -----------------------------------------------------------------
SEARCH_ROOTS = (
    "/work",
    "/var",
    "/srv",
    "/home",
    "/opt",
    "/root",
    "/run",
    "/autograder",
    "/grade",
    "/mnt",
    "/data",
    "/course",
    "/tmp",
)
SKIP_DIRS = {".venv", "site-packages", "__pycache__", "node_modules", ".pyenv", ".git", "proc", "sys", "dist-packages"}
HARNESS_OUTPUTS = ("grade.json", "results.json", "prairielearn.json", "gradebook.csv", "gradebook.html", "suite.json")


def own_folders() -> tuple[str, ...]:
    """The relay's own folders (its copy, ledger folder), which every search leaves out."""
    env = os.environ
    return tuple(p for p in (os.getcwd(), env.get("HOME"), os.path.dirname(env.get("LEDGER_PATH", "")) or None) if p)


def find_files(
    names: tuple[str, ...] = (),
    suffixes: tuple[str, ...] = (),
    roots: tuple[str, ...] = SEARCH_ROOTS,
    budget_s: float = 4.0,
    depth: int = 8,
    skip: tuple[str, ...] = (),
) -> list[str]:
    """Files this process can see, outside its own folders, by exact name or suffix: a walk bounded in time
    and depth."""
    own = own_folders() + tuple(skip)
    deadline, found = time.monotonic() + budget_s, []
    for root in roots:
        base = root.rstrip("/").count("/")
        for dirpath, dirnames, filenames in os.walk(root):
            if time.monotonic() > deadline:
                return found
            if (
                any(dirpath == o or dirpath.startswith(o.rstrip("/") + "/") for o in own)
                or dirpath.count("/") - base >= depth
                or os.path.basename(dirpath) in SKIP_DIRS
            ):
                dirnames[:] = []
                continue
            found += [os.path.join(dirpath, f) for f in filenames if f in names or (suffixes and f.endswith(suffixes))]
    return found


def read_first(paths: list[str], what: str, needle: str) -> str:
    """'read <what> <path>: <first line>' for the first readable file holding `needle`; Refused if none."""
    for path in paths:
        try:
            with open(path, errors="replace") as f:
                text = f.read(8000)
        except OSError:
            continue
        if needle in text:
            return f"read {what} {path}: {text.strip().splitlines()[0][:160]}"
    raise Refused(f"no {what} readable ({len(paths)} candidate names seen)")


# -- raw system calls --------------------------------------------------------------------------------
def syscall(nr: int, *args: int) -> int:
    """A system call by number; OSError with its errno when it fails."""
    result = _libc.syscall(ctypes.c_long(nr), *[ctypes.c_long(a) if isinstance(a, int) else a for a in args])
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, os.strerror(err))
    return result


def libc():
    return _libc


# -- the serve hooks ---------------------------------------------------------------------------------
def patch_health(handler) -> None:
    """Make serve's GET /health call `handler(n)` first (n: 1, 2, ... per process): a handler returning an int
    answers that HTTP status instead of 200. Must run before main() builds the app."""
    from aiohttp import web

    from relay_under_test.reference import serve as serve_module

    original = serve_module.make_app
    count = [0]

    def make_app(make_relay):
        app = original(make_relay)

        @web.middleware
        async def gate(request, handler_next):
            if request.path == "/health":
                count[0] += 1
                status = handler(count[0])
                if isinstance(status, int):
                    return web.json_response({"ok": False}, status=status)
            return await handler_next(request)

        app.middlewares.append(gate)
        return app

    serve_module.make_app = make_app


def is_serve(argv: list[str]) -> bool:
    return bool(argv) and argv[0] == "serve"
