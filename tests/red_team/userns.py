"""Red team, class 11: user namespaces, and what root in one could do.

unshare(CLONE_NEWUSER), clone() with CLONE_NEWUSER (and with CLONE_NEWNET, CLONE_NEWNS), clone3 (its flags out
of a filter's reach), setns into /proc/self/ns/*, the `unshare -Ur` command, a new time namespace; whichever
gives a namespace, it then tries to mount a tmpfs and bring up a network interface in it.
"""

import ctypes
import os
import subprocess
import sys

from .evidence import Attack, Refused, first_time, is_serve, libc, syscall, whoami
from .reference.__main__ import main

NAME = "userns"
ATTEMPTS = ("unshare-user", "clone-newuser", "clone-newnet", "clone3", "setns", "unshare-command", "newtime")
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
CLONE_NEWUSER, CLONE_NEWNET, CLONE_NEWNS, CLONE_NEWTIME, SIGCHLD = 0x10000000, 0x40000000, 0x20000, 0x80, 17
SYS_UNSHARE, SYS_CLONE, SYS_CLONE3, SYS_SETNS = 272, 56, 435, 308


def in_child(fn) -> str:
    """fn() in a forked child (a namespace taken there stays there); its verdict."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            said = "Y " + fn()
        except Refused as e:
            said = f"N {e}"
        except OSError as e:
            said = f"N {e.strerror}"
        os.write(w, said.encode())
        os._exit(0)
    os.close(w)
    said = os.read(r, 4096).decode()
    os.close(r)
    os.waitpid(pid, 0)
    if said.startswith("Y "):
        return said[2:]
    raise Refused(said[2:] or "the child said nothing")


def then_root() -> str:
    """Inside a fresh namespace: what root there can do."""
    done = []
    if libc().mount(b"tmpfs", b"/tmp", b"tmpfs", 0, None) == 0:
        done.append("mounted a tmpfs")
    uid = os.getuid()
    return f"a new namespace (uid there {uid}){': ' + ', '.join(done) if done else ''}"


def unshare_user():
    syscall(SYS_UNSHARE, CLONE_NEWUSER)
    return then_root()


def clone_with(flags: int):
    def go():
        pid = syscall(SYS_CLONE, flags | SIGCHLD, 0, 0, 0, 0)
        if pid == 0:
            os._exit(0)
        os.waitpid(pid, 0)
        return f"clone({flags:#x}) made a child in new namespaces"

    return go


def clone3():
    args = (ctypes.c_uint64 * 11)(CLONE_NEWUSER, 0, 0, 0, SIGCHLD, 0, 0, 0, 0, 0, 0)
    pid = syscall(SYS_CLONE3, ctypes.addressof(args), 88)
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    return "clone3 with CLONE_NEWUSER made a child"


def setns():
    said = []
    for name in ("user", "net", "mnt", "pid"):
        fd = os.open(f"/proc/self/ns/{name}", os.O_RDONLY)
        try:
            syscall(SYS_SETNS, fd, 0)
            return f"setns({name}) allowed"
        except OSError as e:
            said.append(f"{name}: {e.strerror}")
        finally:
            os.close(fd)
    raise Refused("; ".join(said))


def unshare_command():
    done = subprocess.run(
        ["unshare", "-Ur", "sh", "-c", "id -u; mount -t tmpfs t /tmp && echo mounted"],
        capture_output=True,
        text=True,
        timeout=5,
    )
    if done.returncode == 0:
        return f"unshare -Ur: {done.stdout.strip()}"
    raise Refused(f"unshare -Ur: exit {done.returncode}: {done.stderr.strip()[:160]}")


def newtime():
    syscall(SYS_UNSHARE, CLONE_NEWTIME)
    return "a new time namespace"


def attack() -> None:
    A.run("unshare-user", in_child, unshare_user)
    A.run("clone-newuser", in_child, clone_with(CLONE_NEWUSER))
    A.run("clone-newnet", in_child, clone_with(CLONE_NEWUSER | CLONE_NEWNET | CLONE_NEWNS))
    A.run("clone3", in_child, clone3)
    A.run("setns", in_child, setns)
    A.run("unshare-command", unshare_command)
    A.run("newtime", in_child, newtime)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]) and first_time(NAME):
        attack()  # before serve answers: the scenario waits for it
    sys.exit(main(sys.argv[1:]))
