"""Red team, class 10: the machine's setuid binaries.

Each one that is there, asked for what only root may do: mount a tmpfs, unmount /tmp, su and sudo without a
password, newuidmap/newgidmap into a namespace, passwd showing root's entry, gpasswd and chsh changing
accounts, ping (a raw or ICMP socket). Any of them doing it means the setuid bit counted.
"""

import os
import subprocess
import sys

from .evidence import Attack, Refused, first_time, is_serve, whoami
from .reference.__main__ import main

NAME = "setuid_bins"
ATTEMPTS = ("mount", "umount", "su", "sudo", "newuidmap", "passwd", "gpasswd", "chsh", "ping", "setuid-bits")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
BIN = ("/usr/bin", "/usr/sbin", "/bin", "/sbin")


def which(name: str) -> str:
    for folder in BIN:
        path = os.path.join(folder, name)
        if os.path.exists(path):
            return path
    raise Refused(f"{name} is not on this machine")


def run(argv: list[str], ok) -> str:
    argv = [which(argv[0])] + argv[1:]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=5, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise Refused(f"{' '.join(argv)} hung (killed after 5 s)") from None
    said = (done.stdout + done.stderr).strip().replace("\n", " | ")[:200]
    if ok(done):
        return f"{' '.join(argv)} did it (exit {done.returncode}): {said}"
    raise Refused(f"{' '.join(argv)}: exit {done.returncode}: {said}")


def root_said(done) -> bool:
    return done.returncode == 0 and "uid=0" in done.stdout


def setuid_bits():
    """What the exec gave: run `id` through each setuid binary that can run a command."""
    found = [
        os.path.join(f, n)
        for f in BIN
        if os.path.isdir(f)
        for n in os.listdir(f)
        if os.path.isfile(os.path.join(f, n)) and os.stat(os.path.join(f, n)).st_mode & 0o4000
    ]
    if os.geteuid() == 0:
        return "euid 0"
    raise Refused(f"{len(found)} setuid binaries visible ({', '.join(sorted(found)[:8])}); none ran as root above")


def attack() -> None:
    os.makedirs("/tmp/red-team-mnt", exist_ok=True)
    A.run("mount", run, ["mount", "-t", "tmpfs", "tmpfs", "/tmp/red-team-mnt"], lambda d: d.returncode == 0)
    A.run("umount", run, ["umount", "/tmp"], lambda d: d.returncode == 0)
    A.run("su", run, ["su", "-c", "id", "root"], root_said)
    A.run("sudo", run, ["sudo", "-n", "id"], root_said)
    A.run("newuidmap", run, ["newuidmap", str(os.getpid()), "0", "0", "1"], lambda d: d.returncode == 0)
    A.run("passwd", run, ["passwd", "-S", "root"], lambda d: d.returncode == 0)
    A.run("gpasswd", run, ["gpasswd", "-a", "nobody", "root"], lambda d: d.returncode == 0)
    A.run("chsh", run, ["chsh", "-s", "/bin/sh", "root"], lambda d: d.returncode == 0)
    A.run("ping", run, ["ping", "-c", "1", "-W", "1", "127.0.0.1"], lambda d: d.returncode == 0)
    A.run("setuid-bits", setuid_bits)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]) and first_time(NAME):
        attack()  # before serve answers: the scenario waits for it
    sys.exit(main(sys.argv[1:]))
