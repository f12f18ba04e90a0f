"""Red team, class 9: Unix sockets, by path and abstract.

Docker's and containerd's sockets, every socket file it can find in its view, abstract names the machine's
services use (systemd, X11, containerd shims, dbus), the abstract and path sockets listed in /proc/net/unix of
its network namespace, and an abstract socket of another command of its own stack (serve listens on
`@red-team-unix-<random>`; the batch commands and the second serve try it: the sandbox scopes abstract sockets to
a command's own processes).
"""

import os
import socket
import sys

from .evidence import Attack, Refused, find_files, is_serve, scratch, whoami
from .reference.__main__ import main

NAME = "unix_sockets"
ATTEMPTS = ("docker-sock", "socket-files", "abstract-machine", "proc-net-unix", "abstract-sibling")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
DOCKER = (
    "/var/run/docker.sock",
    "/run/docker.sock",
    "/run/containerd/containerd.sock",
    "/run/podman/podman.sock",
    "/run/user/0/docker.sock",
    "/var/run/dbus/system_bus_socket",
    "/run/dbus/system_bus_socket",
)
ABSTRACT = (
    "/tmp/.X11-unix/X0",
    "/org/freedesktop/systemd1/notify",
    "/containerd-shim/default.sock",
    "/run/containerd/s/0",
    "dbus-session",
    "/tmp/dbus-session",
)
SIBLING_LIST = "rt-unix-siblings"
ME = os.urandom(4).hex()  # every command is PID 2 of its own namespace: pids would collide


def connect(address) -> socket.socket:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(1)
    s.connect(address)
    return s


def try_all(addresses, what: str):
    said = []
    for address in addresses:
        try:
            connect(address).close()
            return f"connected to {what} {address!r}"
        except OSError as e:
            said.append(f"{address!r}: {e.strerror}")
    raise Refused("; ".join(said[:6]) or f"no {what} to try")


def socket_files():
    import stat

    found = [
        p
        for p in find_files(suffixes=("",), budget_s=2, roots=("/run", "/var", "/etc", "/opt", "/work"))
        if stat.S_ISSOCK(os.lstat(p).st_mode)
    ]
    return try_all(found, "socket file")


def proc_net_unix():
    names = []
    for line in open("/proc/net/unix").read().splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[5] == "01":  # listening
            names.append(fields[7])
    mine = f"@red-team-unix-{ME}"
    others = [n for n in names if n != mine]
    return try_all([b"\0" + n[1:].encode() if n.startswith("@") else n for n in others], "listed socket")


def listen_abstract() -> None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(b"\0" + f"red-team-unix-{ME}".encode())
    s.listen(8)
    with open(scratch(SIBLING_LIST), "a") as f:
        f.write(f"{ME}\n")

    def serve_it():
        while True:
            conn, _ = s.accept()
            conn.sendall(b"a sibling command's socket\n")
            conn.close()

    A.background(serve_it)


def abstract_sibling():
    try:
        pids = [p.strip() for p in open(scratch(SIBLING_LIST)) if p.strip() and p.strip() != ME]
    except FileNotFoundError:
        raise Refused("no sibling command listed (this is the first)") from None
    said = []
    for pid in pids:
        try:
            with connect(b"\0" + f"red-team-unix-{pid}".encode()) as s:
                return f"reached another command's abstract socket: {s.recv(64)!r}"
        except OSError as e:
            said.append(f"@red-team-unix-{pid}: {e.strerror}")
    raise Refused("; ".join(said) or "no other command listed")


def attack() -> None:
    A.run("docker-sock", try_all, DOCKER, "daemon socket")
    A.run("socket-files", socket_files)
    A.run("abstract-machine", try_all, [b"\0" + a.encode() for a in ABSTRACT], "abstract socket")
    A.run("proc-net-unix", proc_net_unix)
    A.run("abstract-sibling", abstract_sibling)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        listen_abstract()
    attack()  # before the command does its work (serve: before it answers)
    sys.exit(main(sys.argv[1:]))
