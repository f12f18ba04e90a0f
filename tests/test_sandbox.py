"""The sandbox, layer by layer: what each enforces, what is said when it cannot, and what a diagnosis finds.

The red team (tests/test_red_team.py) attacks the layers together, as students would; here
each is pinned down on its own: the exec wrapper, the seccomp program, the level on record,
strict mode's refusal, the message that names what starves or refuses a relay, the ledger
file's checks and tamper evidence. The isolated command (the filesystem view, the slot's
network and cgroups) is in test_sandbox_isolation.py.
"""

import errno
import json
import os
import shutil
import socket
import struct
import subprocess
import sys

import pytest

from relaychaos.errors import RelayError, SandboxError
from relaychaos.sandbox import landlock, levels, seccomp
from relaychaos.sandbox.levels import Limits, probe
from relaychaos.sandbox.plan import WRAPPER, Plan
from relaychaos.sandbox.policy import Sandbox, outermost

from .conftest import REFERENCE

ROOT_ONLY = pytest.mark.skipif(
    os.geteuid() != 0 or landlock.abi() < 6 or levels.offered()[0],
    reason=f"needs every layer (euid {os.geteuid()}, ABI {landlock.abi()}, missing {levels.offered()[0]})",
)
PROBE = r"""
import ctypes, errno, json, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
out = {}
def attempt(name, call):
    try:
        call(); out[name] = "ok"
    except OSError as e:
        out[name] = errno.errorcode.get(e.errno, str(e.errno))
def raw(name, rc):
    out[name] = "ok" if rc >= 0 else errno.errorcode[ctypes.get_errno()]
attempt("tcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM).close())
attempt("tcp6", lambda: socket.socket(socket.AF_INET6, socket.SOCK_STREAM).close())
attempt("unix", lambda: socket.socket(socket.AF_UNIX, socket.SOCK_STREAM).close())
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
attempt("mptcp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 262))
attempt("sctp", lambda: socket.socket(socket.AF_INET, socket.SOCK_STREAM, 132))
attempt("netlink", lambda: socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 0))
attempt("packet", lambda: socket.socket(17, socket.SOCK_RAW, 0))
raw("userns", libc.unshare(0x10000000))
raw("io_uring", libc.syscall(425, 8, ctypes.create_string_buffer(120)))
raw("ptrace", libc.syscall(101, 0x4206, os.getppid(), 0, 0))
raw("bpf", libc.syscall(321, 0, 0, 0))
attempt("fast_open", lambda: socket.socket().sendto(b"x", 0x20000000, ("127.0.0.1", 9)))
import fcntl, tempfile
attempt("lease", lambda: fcntl.fcntl(tempfile.TemporaryFile(), 1024, fcntl.F_WRLCK))
print(json.dumps(out))
"""


def wrapped(plan: Plan, *argv: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(plan.wrap(list(argv)), capture_output=True, text=True, timeout=60, env=env)


# -- the exec wrapper -------------------------------------------------------------------------
@pytest.mark.process
def test_the_wrapper_execs_the_command_in_place_with_the_limits_set():
    done = wrapped(
        Plan(rlimits={"nofile": 77, "core": 0}),
        sys.executable,
        "-c",
        "import resource; print(resource.getrlimit(resource.RLIMIT_NOFILE))",
    )
    assert done.returncode == 0 and done.stdout.split() == ["(77,", "77)"], done.stderr


@pytest.mark.process
def test_a_command_that_cannot_be_found_exits_127_naming_it():
    done = wrapped(Plan(), "no-such-relay-binary")
    assert done.returncode == 127 and "cannot run `no-such-relay-binary`" in done.stderr


@pytest.mark.process
def test_a_layer_that_cannot_be_applied_stops_the_command_and_names_the_layer():
    done = wrapped(Plan(rlimits={"nofile": 1 << 40}), "true")  # above the hard limit: refused
    assert done.returncode == 126
    assert "layer 'rlimits' could not be applied: nofile" in done.stderr and "`true` was not run" in done.stderr


@pytest.mark.process
def test_the_wrapper_imports_no_package_so_that_it_starts_fast():
    done = subprocess.run(
        [sys.executable, "-I", "-S", "-X", "importtime", WRAPPER, Plan().dumps(), "--", "true"],
        capture_output=True,
        text=True,
    )
    imported = {line.split("|")[-1].strip() for line in done.stderr.splitlines() if "import time" in line}
    assert not {m for m in imported if m.startswith(("relaychaos", "dataclasses", "pathlib"))}, imported


@pytest.mark.process
def test_what_python_ignores_is_not_passed_on_to_the_relay():
    """Python ignores SIGPIPE and SIGXFSZ; an exec keeps an ignored signal ignored. The relay gets defaults."""
    done = wrapped(Plan(seccomp=True), "grep", "SigIgn", "/proc/self/status")
    assert done.stdout.split() == ["SigIgn:", "0000000000000000"], done.stdout + done.stderr


# -- seccomp --------------------------------------------------------------------------------------
def run_bpf(code: bytes, nr: int, args: tuple[int, ...], arch: int = seccomp.AUDIT_ARCH_X86_64) -> int:
    """Classic BPF, as the kernel runs a seccomp filter over struct seccomp_data (the opcodes program() uses)."""
    data = struct.pack("=iIQ6Q", nr, arch, 0, *(list(args) + [0] * (6 - len(args))))
    insns = [struct.unpack_from("=HBBI", code, i) for i in range(0, len(code), 8)]
    acc, pc = 0, 0
    while True:
        op, jt, jf, k = insns[pc]
        pc += 1
        if op == 0x20:
            acc = struct.unpack_from("=I", data, k)[0]
        elif op == 0x54:
            acc &= k
        elif op in (0x15, 0x35, 0x45):
            taken = acc == k if op == 0x15 else acc >= k if op == 0x35 else bool(acc & k)
            pc += jt if taken else jf
        elif op == 0x06:
            return k
        else:
            raise AssertionError(f"opcode {op:#x} not modelled")


CALLS = [
    (41, (2, 1, 0)),
    (41, (10, 1 | 0x80000, 6)),
    (41, (1, 1, 0)),
    (41, (1, 2, 0)),
    (41, (2, 2, 0)),
    (41, (2, 3, 1)),
    (41, (2, 1, 262)),
    (41, (2, 1, 132)),
    (41, (16, 3, 0)),
    (41, (17, 3, 0)),
    (53, (1, 1, 0)),
    (53, (2, 1, 0)),
    (56, (0x11,)),
    (56, (0x10000000 | 0x11,)),
    (272, (0x400,)),
    (272, (0x40000000,)),
    (101, ()),
    (425, ()),
    (321, ()),
    (0, ()),
    (59, ()),
    (435, ()),
    (44, (3, 0, 1, 0x20000000)),
    (44, (3, 0, 1, 0x40)),
    (46, (3, 0, 0x20000000)),
    (307, (3, 0, 1, 0x20000000)),
    (72, (3, 1024, 1)),
    (72, (3, 4, 0x800)),
    (0x40000000 | 41, (2, 1, 0)),
]


@pytest.mark.parametrize("nr, args", CALLS)
def test_the_filter_refuses_exactly_what_refusal_says_with_its_errno(nr, args):
    code = seccomp.program(notify=False)
    verdict = run_bpf(code, nr, args)
    if nr in (seccomp.CLONE3, 0x40000000 | 41):
        assert verdict == seccomp.RET_ERRNO | errno.ENOSYS  # quietly absent, so libc falls back
        return
    expected = seccomp.refusal(nr, args)
    assert verdict == (seccomp.RET_ALLOW if expected is None else seccomp.RET_ERRNO | expected[1]), (nr, args)
    if expected is not None and not (nr == seccomp.SOCKET and args[2] == 262):
        assert run_bpf(seccomp.program(notify=True), nr, args) == seccomp.RET_USER_NOTIF  # said in the log


def test_another_architecture_is_killed_before_any_rule_is_read():
    assert run_bpf(seccomp.program(notify=False), 41, (2, 1, 0), arch=0x40000003) == seccomp.RET_KILL_PROCESS


@pytest.mark.process
def test_in_a_real_process_only_tcp_and_unix_sockets_open_and_no_namespace_can_be_made():
    done = wrapped(Plan(seccomp=True), sys.executable, "-c", PROBE)
    assert json.loads(done.stdout) == {
        "tcp": "ok",
        "tcp6": "ok",
        "unix": "ok",
        "udp": "EACCES",
        "mptcp": "EPROTONOSUPPORT",
        "sctp": "EPROTONOSUPPORT",
        "netlink": "EAFNOSUPPORT",
        "packet": "EAFNOSUPPORT",
        "userns": "EPERM",
        "io_uring": "ENOSYS",
        "ptrace": "EPERM",
        "bpf": "EPERM",
        "fast_open": "EACCES",
        "lease": "EPERM",
    }, done.stderr


# -- the plan and the level -------------------------------------------------------------------------
def test_only_the_outermost_folders_are_bound():
    assert outermost(["/a", "/a/b", "/c"]) == ("/a", "/c")


def test_limits_can_be_changed_by_name_and_a_bad_one_is_refused_with_the_names():
    assert Limits().with_overrides("memory_mib=2048, tasks=64") == Limits(memory_mib=2048, tasks=64)
    with pytest.raises(SandboxError, match="memory_mib, tasks, cpu_shares"):
        Limits().with_overrides("memory=3G")


def test_off_enforces_nothing_and_says_so_for_every_layer():
    level = probe("off")
    assert level["enforced"] is False and set(level["missing"]) == set(levels.LAYERS)


def test_strict_refuses_to_run_when_any_layer_is_missing_naming_it_and_how_to_get_it():
    with pytest.raises(SandboxError) as e:
        levels.check("strict", {"network": "nft not installed (packages iproute2, nftables; ...)"})
    assert "missing: network (nft not installed" in str(e.value) and "--sandbox auto" in str(e.value)
    levels.check("auto", {"network": "nft not installed"})  # auto runs, and says it


def test_strict_refusing_a_layer_the_run_s_own_set_up_rules_out_says_to_change_the_set_up_not_the_machine():
    elsewhere = {"network": "Toxiproxy is on another host (10.215.3.2)"}
    with pytest.raises(SandboxError) as e:
        levels.check("strict", elsewhere, without=elsewhere)
    assert "missing: network (Toxiproxy is on another host" in str(e.value) and "unset TOXIPROXY_URL" in e.value.fix
    assert "as root" not in e.value.fix
    with pytest.raises(SandboxError) as e:  # the machine lacks a layer too: the machine's fix
        levels.check("strict", {**elsewhere, "landlock": "Linux 5.4"}, without=elsewhere)
    assert "as root on Linux 6.12+" in e.value.fix


@pytest.mark.process
def test_a_machine_without_nftables_gets_a_sandbox_without_the_network_layer_saying_why(monkeypatch):
    monkeypatch.setenv("PATH", "/usr/bin:/bin")  # nft lives in /usr/sbin: as a user's PATH often leaves it out
    assert shutil.which("nft") is None
    sandbox = Sandbox.create("auto")
    try:
        assert "nft not installed" in sandbox.missing["network"] and sandbox.network is None
    finally:
        sandbox.close()


@pytest.mark.process
def test_strict_refusal_from_the_command_line_is_one_message_and_exit_2(tmp_path):
    code = (
        "import sys; from relaychaos.sandbox import levels; levels.netns.missing = lambda: 'nft is not here'; "
        "from relaychaos.commands.cli import main; sys.exit(main(['replay', sys.argv[1], '--out', sys.argv[2], "
        "'--sandbox', 'strict']))"
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            code,
            str(REFERENCE.parents[2] / "scenarios" / "regressions" / "check-then-insert-short-resends.yaml"),
            str(tmp_path / "o"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert (
        done.returncode == 2
        and "--sandbox strict refuses" in done.stderr
        and "network (nft is not here)" in done.stderr
    )
    assert not (tmp_path / "o").exists(), "nothing started"


@ROOT_ONLY
def test_here_every_layer_is_enforced_and_said_in_one_line():
    level = probe("auto")
    assert level["missing"] == {} and set(level["layers"]) == set(levels.LAYERS)
    assert json.dumps(level)
    line = levels.describe(level)
    assert line.startswith("sandbox auto: uid (") and "network" in line and "not enforced" not in line


# -- a runtime the limits starve ---------------------------------------------------------------
@ROOT_ONLY
def test_a_relay_the_memory_limit_starves_gets_the_layer_its_measured_need_and_the_flag(make_stack):
    starved = Sandbox.create("auto", Limits(memory_mib=24))
    try:
        stack = make_stack(REFERENCE, sandbox=starved)
        with pytest.raises(RelayError) as e:
            stack.start_relay()
        message = str(e.value)
        assert "resource limits starve serve" in message and "limit memory_mib=24" in message, message
        assert "fix: --sandbox-limit memory_mib=" in message
        stack.close()
    finally:
        starved.close()


def test_a_relay_refused_a_socket_is_told_which_and_by_which_layer(make_stack, write_manifest):
    udp = [sys.executable, "-c", "import socket; socket.socket(socket.AF_INET, socket.SOCK_DGRAM)"]
    stack = make_stack(write_manifest(serve=udp, ready_timeout_s=5))
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "seccomp refused socket(AF_INET, SOCK_DGRAM, 0)" in str(e.value) and "EACCES" in str(e.value)


def test_a_relay_that_binds_another_port_is_told_what_it_may_listen_on(make_stack, write_manifest):
    other = [sys.executable, "-c", "import socket; socket.socket().bind(('127.0.0.1', 8080))"]
    stack = make_stack(write_manifest(serve=other, ready_timeout_s=5))
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "serve may listen only on RELAY_PORT" in str(e.value), str(e.value)


@ROOT_ONLY
def test_a_relay_that_listens_without_binding_is_refused_the_ephemeral_port(make_stack, write_manifest):
    unbound = [sys.executable, "-c", "import socket; socket.socket().listen()"]
    stack = make_stack(write_manifest(serve=unbound, ready_timeout_s=5))
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "seccomp refused listen on 0.0.0.0:0 (an unbound socket" in str(e.value), str(e.value)


@ROOT_ONLY
def test_a_listen_from_a_thread_that_is_not_the_processs_first_is_looked_at_all_the_same(make_stack, write_manifest):
    threaded = [
        sys.executable,
        "-c",
        "import socket, threading; t = threading.Thread(target=lambda: socket.socket().listen()); t.start(); t.join()",
    ]
    stack = make_stack(write_manifest(serve=threaded, ready_timeout_s=5))
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "seccomp refused listen on 0.0.0.0:0 (an unbound socket" in str(e.value), str(e.value)


SWAP = """
import ctypes, os, socket, threading
allowed = socket.socket()
allowed.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
allowed.bind(("127.0.0.1", int(os.environ["RELAY_PORT"])))
unbound = socket.socket()
fd, done = os.dup(allowed.fileno()), threading.Event()
def swap():
    while not done.is_set():
        os.dup2(unbound.fileno(), fd)
        os.dup2(allowed.fileno(), fd)
threading.Thread(target=swap, daemon=True).start()
listen = ctypes.CDLL(None).listen
for _ in range(3000):
    listen(fd, 8)
done.set()
print("the unbound socket listens:", bool(unbound.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)), flush=True)
"""


@ROOT_ONLY
def test_a_socket_swapped_in_after_init_looked_never_listens_init_listens_on_the_socket_it_looked_at(
    make_stack, write_manifest
):
    stack = make_stack(write_manifest(serve=[sys.executable, "-c", SWAP], ready_timeout_s=20))
    with pytest.raises(RelayError) as e:
        stack.start_relay()
    assert "the unbound socket listens: False" in str(e.value), str(e.value)


# -- tamper evidence -----------------------------------------------------------------------------
def test_the_audit_names_each_change_made_behind_the_harness_s_back(stack, toxiproxy):
    stack.start_relay()
    stack.add_toxic("account", "latency", latency=200)
    stack.set_proxy_enabled("hub-a", False)
    stack.account.set_faults(delay_ms=50)
    assert stack.audit() == [], "what the harness itself set is no tampering"
    toxiproxy.remove_toxic(stack.proxies["account"], "latency_downstream")  # someone else's hand
    toxiproxy.set_enabled(stack.proxies["hub-a"], True)
    assert stack.audit() == [
        "toxic latency_downstream (latency) on proxy account was removed; the harness added it",
        "proxy hub-a is enabled; the harness disabled it",
    ]
    stack.heal()
    assert stack.audit() == []


def test_a_toxic_removed_by_someone_else_is_no_harness_crash(stack, toxiproxy):
    stack.start_relay()
    stack.add_toxic("account", "latency", latency=200)
    toxiproxy.remove_toxic(stack.proxies["account"], "latency_downstream")
    stack.remove_toxic("account", "latency_downstream")  # gone already: the audit says so, nothing raises
    toxiproxy.destroy(stack.proxies["hub-a"].name)
    stack.heal()
    assert "proxy hub-a was deleted" in stack.audit()


def test_the_relays_socket_family_is_kept_apart_from_the_harness_s():
    assert socket.AF_INET == seccomp.AF_INET and socket.AF_UNIX == seccomp.AF_UNIX
