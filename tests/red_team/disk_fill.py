"""Red team, class 4: the disk.

In a child of `serve` (first start of a stack): fill its ledger folder, its copy and /tmp until they refuse,
to see whether the slot's disk_mib (512) is one quota for the three or one each; grow one sparse file past
fsize_mib. Then, in every command, leave a marker in each folder it can write (copy, ledger folder, /tmp,
/dev/shm) and look for markers an earlier scenario or command left: anything found outlived its scenario.
"""

import contextlib
import os
import signal
import sys
import time

from .evidence import Attack, Refused, first_time, is_serve, ledger_dir, whoami
from .reference.__main__ import main

NAME = "disk_fill"
ATTEMPTS = ("beyond-disk-quota", "beyond-file-size", "outlives-scenario")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
MIB = 1 << 20
QUOTA_MIB, FSIZE_MIB = 512, 512
STAMP = f"{os.getpid()}-{time.time():.6f}"


def places() -> list[str]:
    return [ledger_dir(), os.getcwd(), "/tmp"]


def in_child(fn) -> str:
    """Run fn() in a child (a filled disk or SIGXFSZ kills it, not serve); its one-line result."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        try:
            said = "OK " + fn()
        except Refused as e:
            said = f"NO {e}"
        except OSError as e:
            said = f"NO {e.strerror}"
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    said = b""
    while chunk := os.read(r, 4096):
        said += chunk
    _, status = os.waitpid(pid, 0)
    os.close(r)
    text = said.decode()
    if os.WIFSIGNALED(status):
        raise Refused(f"the filling child was killed by signal {os.WTERMSIG(status)}")
    if text.startswith("OK "):
        return text[3:]
    raise Refused(text[3:] or "no answer")


def fill() -> str:
    total, said = 0, []
    files = []
    chunk = b"\x03" * MIB
    try:
        for place in places():
            path = os.path.join(place, f"red-team-fill-{os.getpid()}")
            files.append(path)
            written = 0
            try:
                with open(path, "wb") as f:
                    while written < 2 * QUOTA_MIB * MIB:
                        f.write(chunk)
                        f.flush()
                        written += MIB
            except OSError as e:
                said.append(f"{place}: {e.strerror} after {written // MIB} MiB")
            total += written
    finally:
        for path in files:
            with contextlib.suppress(OSError):
                os.unlink(path)
    if total > (QUOTA_MIB + 32) * MIB:
        return f"wrote {total // MIB} MiB in all past a {QUOTA_MIB} MiB quota ({'; '.join(said)})"
    raise Refused(f"{total // MIB} MiB in all ({'; '.join(said)})")


def sparse() -> str:
    path = os.path.join("/tmp", "red-team-sparse")
    try:
        with open(path, "wb") as f:
            f.truncate(4 * FSIZE_MIB * MIB)
            size = os.fstat(f.fileno()).st_size
    finally:
        with contextlib.suppress(OSError):
            os.unlink(path)
    return f"made a file of {size // MIB} MiB (fsize_mib {FSIZE_MIB})"


def outlives() -> str:
    found = []
    for place in places() + ["/dev/shm", os.environ.get("HOME", "/tmp")]:
        try:
            names = os.listdir(place)
        except OSError:
            continue
        found += [os.path.join(place, n) for n in names if n.startswith("red-team-marker-") and STAMP not in n]
        try:
            with open(os.path.join(place, f"red-team-marker-{STAMP}"), "w") as f:
                f.write(f"left by {NAME} {STAMP} in {os.environ.get('LEDGER_PATH')}\n")
        except OSError:
            pass
    earlier = []
    for path in found:
        try:
            with open(path) as f:
                text = f.read()
        except OSError:
            continue
        if os.environ.get("LEDGER_PATH", "") not in text:  # left by another stack, not by this one's other commands
            earlier.append(f"{path}: {text.strip()}")
    if earlier:
        return f"a marker of another scenario survived: {earlier[0]}"
    raise Refused(f"no marker of another scenario ({len(found)} of this stack's own)")


def attack() -> None:
    A.run("outlives-scenario", outlives)
    if first_time(NAME):
        A.run("beyond-disk-quota", in_child, fill)
        A.run("beyond-file-size", in_child, sparse)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        attack()  # before serve answers: the scenario waits for it
    else:
        A.run("outlives-scenario", outlives)
    sys.exit(main(sys.argv[1:]))
