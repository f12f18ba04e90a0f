"""An adversarial relay: tries every escape it knows, reports each, and serves with one bug.

    python adversary.py {serve|resolve|reprocess|purge} [...]

`serve` first tries, once, to read and write outside its folders, to signal the
harness, to fork without bound and to allocate 8 GiB; then, for as long as it
runs, every 50 ms, to strip the toxics of its own stack through Toxiproxy's admin
API (found by scanning the listening loopback ports) and to call the account
system's control API, through ACCOUNT_URL and on every listening port. Each
attempt prints one line to its log: `ESCAPE <name>: refused (...)` or
`ESCAPE <name>: SUCCEEDED (...)`. It serves as the `unknown_resent` mutant does
(it resends UNKNOWN GUIDs blindly), so a fault scenario catches it when the
faults stay in place. Targets come from targets.json in its folder (written by
the test). Politeness: it strips only the proxies of its own stack, so that
other tests running beside it are not disturbed even with --sandbox off.
"""
import json
import mmap
import os
import signal
import sys
import threading
import time
import urllib.error
import urllib.request
from urllib.parse import urlsplit

TARGETS = json.load(open("targets.json")) if os.path.exists("targets.json") else {}
FORK_CAP = 1100  # above the sandbox's RLIMIT_NPROC (1024): reaching it means the fork was not bounded
MARKER = "61.25"  # the fork bomb's children run `sleep 61.25`, so a test can find them


def report(name, ok, detail):
    print(f"ESCAPE {name}: {'SUCCEEDED' if ok else 'refused'} ({detail})", flush=True)


def attempt(name, action):
    try:
        detail = action()
    except Exception as e:  # whatever stops the attempt is a refusal; say which
        report(name, False, f"{type(e).__name__}: {e}")
    else:
        report(name, True, detail)


def listening_ports():
    ports = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = open(table).read().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            if fields[3] == "0A":  # LISTEN
                ports.add(int(fields[1].rsplit(":", 1)[1], 16))
    return sorted(ports - {int(os.environ.get("RELAY_PORT") or 0)})


def http(method, url, body=None, timeout=0.3):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, method=method, headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=timeout) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()


# -- once --------------------------------------------------------------------------------
def read(path):
    return f"read {len(open(path, 'rb').read())} bytes of {path}"


def write(path):
    with open(path, "w") as f:
        f.write("escaped\n")
    return f"wrote {path}"


def signal_pid(pid):
    os.kill(pid, signal.SIGURG)  # ignored by default: proves the permission without harming the harness
    return f"sent SIGURG to pid {pid}"


def fork_bomb():
    """Fork until refused (or FORK_CAP); keep 5 children, detached from the process group, for the harness
    to find, and end the others so that this relay can still start its own threads."""
    children, why = [], f"stopped at the cap of {FORK_CAP}"
    while len(children) < FORK_CAP:
        try:
            pid = os.fork()
        except OSError as e:
            why = f"fork refused after {len(children)} processes: {e.strerror}"
            break
        if pid == 0:
            os.setsid()  # leave the process group: only a sweep by uid finds it
            os.execv("/bin/sleep", ["sleep", MARKER])
        children.append(pid)
    started = len(children)
    for pid in children[5:]:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    if started >= FORK_CAP:
        return f"started {started} processes ({why})"
    raise OSError(why)


def allocate():
    """Map 8 GiB of private writable memory (what malloc does for a large block), touching none of it: the
    data-size limit refuses the mapping itself, and without one the machine is spared the pages."""
    block = mmap.mmap(-1, 8 << 30, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    size = len(block)
    block.close()
    return f"mapped {size >> 30} GiB"


def once():
    for key in ("sibling_secret", "run_secret", "harness_file"):
        if key in TARGETS:
            attempt(f"read-{key}", lambda p=TARGETS[key]: read(p))
    for i, path in enumerate(TARGETS.get("write_targets", [])):
        attempt(f"write-outside-{i}", lambda p=path: write(p))
    attempt("signal-parent", lambda: signal_pid(os.getppid()))
    if "harness_pid" in TARGETS:
        attempt("signal-harness", lambda: signal_pid(TARGETS["harness_pid"]))
    attempt("fork-unbounded", fork_bomb)
    attempt("allocate-8GiB", allocate)


# -- for as long as it runs -------------------------------------------------------------
def strip_toxics():
    """Find Toxiproxy on a listening port and strip the toxics of this relay's own stack."""
    account_port = urlsplit(os.environ["ACCOUNT_URL"]).port
    errors = []
    for port in listening_ports():
        try:
            status, body = http("GET", f"http://127.0.0.1:{port}/proxies")
            proxies = json.loads(body) if status == 200 else None
        except Exception as e:
            errors.append(f"{port}: {type(e).__name__}: {e}")
            continue
        if not isinstance(proxies, dict) or not proxies:
            continue
        mine = [p for p in proxies.values() if isinstance(p, dict) and p.get("listen", "").endswith(f":{account_port}")]
        if not mine:
            continue
        prefix = mine[0]["name"].rsplit("-", 1)[0]
        changed = []
        for name, p in proxies.items():
            if not name.startswith(prefix + "-"):
                continue
            for t in p.get("toxics") or []:
                http("DELETE", f"http://127.0.0.1:{port}/proxies/{name}/toxics/{t['name']}")
                changed.append(f"{name}/{t['name']}")
            if not p.get("enabled", True):
                http("POST", f"http://127.0.0.1:{port}/proxies/{name}", {"enabled": True})
                changed.append(f"{name} enabled")
        return f"Toxiproxy admin on port {port}: removed or re-enabled {changed or 'nothing (yet)'}"
    raise PermissionError("no Toxiproxy admin API reachable: " + ("; ".join(errors[:3]) or "none listening"))


def control_calls():
    """Clear the account system's faults through ACCOUNT_URL and on every listening port."""
    done = []
    for base in [os.environ["ACCOUNT_URL"]] + [f"http://127.0.0.1:{p}" for p in listening_ports()]:
        for method, path in (("DELETE", "/_control/faults"), ("POST", "/_control/release")):
            try:
                status, _ = http(method, base + path, {})
            except Exception:
                continue
            if status == 200:
                done.append(f"{method} {base}{path}")
    if done:
        return "the control API answered 200 to " + ", ".join(done[:4])
    raise PermissionError("no control endpoint accepted a call (404, 401 or no connection)")


def keep_trying():
    last = {}
    while True:
        for name, action in (("strip-toxics", strip_toxics), ("account-control-api", control_calls)):
            try:
                outcome = (True, action())
            except Exception as e:
                outcome = (False, f"{type(e).__name__}: {e}")
            if last.get(name) != outcome:  # print each new outcome once, not every 50 ms
                report(name, *outcome)
                last[name] = outcome
        time.sleep(0.05)


def main():
    from relaychaos.relay_under_test.mutants.catalogue import MUTANTS
    from relaychaos.relay_under_test.reference.__main__ import main as relay_main

    if sys.argv[1] == "serve":
        once()
        threading.Thread(target=keep_trying, daemon=True).start()
    sys.exit(relay_main(sys.argv[1:], **MUTANTS["unknown_resent"]))


if __name__ == "__main__":
    main()
