"""`relaychaos setup toxiproxy`: a working toxiproxy-server where the harness finds it, for an installed harness.

    relaychaos setup toxiproxy               # builds it with Go (go install ...@v2.12.0), renamed
    relaychaos setup toxiproxy --from FILE   # or takes a binary you have (a release's toxiproxy-server-linux-amd64)
    relaychaos setup toxiproxy --dest DIR    # somewhere else (then DIR on PATH, or RELAYCHAOS_TOOLS_BIN=DIR)
    relaychaos setup sandbox-users [--count N | --remove]   # the sandbox's system users, made ahead or removed (root)

The default place is relaychaos.stack.toxiproxy_server.user_bin(), which the harness searches after PATH. The
binary is checked before it is put there: it must run and say its version.
"""

from __future__ import annotations

import argparse
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

from relaychaos.errors import HarnessError
from relaychaos.sandbox import slots
from relaychaos.stack import toxiproxy_server

MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
STAMP = "github.com/Shopify/toxiproxy/v2.Version"  # what `toxiproxy-server -version` says (Go's default: "git")
RELEASES = "https://github.com/Shopify/toxiproxy/releases"


class SetupError(Exception):
    """What went wrong, and the fix, in one message."""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    setup = sub.add_parser("setup", help="install what the harness needs: a Toxiproxy server, the sandbox's users")
    parts = setup.add_subparsers(dest="part", required=True, title="parts")
    tox = parts.add_parser(
        "toxiproxy",
        help=f"put a toxiproxy-server where the harness finds it: built with Go ({toxiproxy_server.VERSION}), or "
        "a binary you give",
    )
    tox.add_argument("--from", dest="source", help="a toxiproxy-server binary to use (e.g. a release's download)")
    tox.add_argument("--dest", help=f"the folder to put it in (default: {toxiproxy_server.user_bin()})")
    tox.add_argument("--version", default=toxiproxy_server.VERSION, help="the version to build with Go")
    tox.set_defaults(func=cmd_setup_toxiproxy)
    users = parts.add_parser(
        "sandbox-users",
        help="make the sandbox's system users (relaychaos-relay-0 ...) ahead of the first run, or remove them (root)",
    )
    users.add_argument("--count", type=int, default=8, help="how many to make: one per concurrent harness process")
    users.add_argument("--remove", action="store_true", help="remove every one no running harness uses")
    users.set_defaults(func=cmd_setup_sandbox_users)


def cmd_setup_sandbox_users(args: argparse.Namespace) -> int:
    """As root, the harness gives each concurrent process's relays a system user of their own, made with useradd
    the first time a slot is used; this makes them ahead (an image, a machine set up once), or removes them."""
    if os.geteuid() != 0:
        print(
            "relaychaos: setup sandbox-users: only root adds or removes system users; run it with sudo", file=sys.stderr
        )
        return 2
    try:
        if args.remove:
            removed, kept = slots.remove_users()
            print(f"relaychaos: removed {len(removed)} sandbox users{': ' + ', '.join(removed) if removed else ''}")
            if kept:
                print(f"relaychaos: kept {', '.join(kept)}: a running harness uses them; run this again after it ends")
            return 0
        made = [(user, slots.ensure_user(user)[0]) for user in (f"{slots.USER_PREFIX}{n}" for n in range(args.count))]
    except HarnessError as e:
        print(f"relaychaos: setup sandbox-users: {e}", file=sys.stderr)
        return 2
    print("relaychaos: sandbox users: " + ", ".join(f"{user} ({uid})" for user, uid in made))
    return 0


def cmd_setup_toxiproxy(args: argparse.Namespace) -> int:
    dest = Path(args.dest).expanduser() if args.dest else toxiproxy_server.user_bin()
    target = dest / "toxiproxy-server"
    version = args.version if args.version.startswith("v") else f"v{args.version}"  # the tag, as Go wants it
    try:
        with tempfile.TemporaryDirectory(prefix="relaychaos-setup-") as work:
            if args.source:
                staged = _stage(Path(args.source), Path(work))
            elif _says(target, version):
                print(f"relaychaos: {target} is toxiproxy-server {version} already: nothing to do ({_where(target)})")
                return 0
            else:
                staged = _build(version, Path(work))
            said = version_of(staged)
            _install(staged, dest, target)
    except SetupError as e:
        print(f"relaychaos: setup toxiproxy: {e}", file=sys.stderr)
        return 2
    print(f"relaychaos: {target} ({said}): {_where(target)}")
    return 0


def _where(target: Path) -> str:
    """Whether the harness finds `target`, and what to do if it does not."""
    found = toxiproxy_server.find_binary()
    if found and Path(found).resolve() == target.resolve():
        return "the harness finds it there"
    dest = target.parent
    return f"put {dest} on PATH or set RELAYCHAOS_TOOLS_BIN={dest} so that the harness uses it" + (
        f" (it finds {found} first now)" if found else ""
    )


def _stage(source: Path, work: Path) -> Path:
    """A copy of the binary given, executable, in `work` (a download has no execute bit; a bare name is a file here,
    not a command on PATH); SetupError when there is no such file."""
    source = source.expanduser().absolute()
    if not source.exists():
        raise SetupError(f"no such file: {source}; give the path of the toxiproxy-server binary you downloaded")
    if not source.is_file():
        raise SetupError(f"{source} is a folder; give the path of the toxiproxy-server binary in it")
    staged = work / "toxiproxy-server"
    try:
        shutil.copyfile(source, staged)
    except OSError as e:
        raise SetupError(f"cannot read {source} ({e.strerror}); give a file you can read") from None
    os.chmod(staged, 0o755)
    return staged


def _install(staged: Path, dest: Path, target: Path) -> None:
    """Put the checked binary at `target` (whole, or not at all)."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
        partial = dest / ".toxiproxy-server.partial"
        shutil.copyfile(staged, partial)
        os.chmod(partial, 0o755)
        os.replace(partial, target)
    except OSError as e:
        raise SetupError(
            f"cannot write {dest} ({e.strerror}); give a folder you can write with --dest DIR (then put DIR on PATH "
            "or set RELAYCHAOS_TOOLS_BIN=DIR), or set XDG_DATA_HOME to one"
        ) from None


def _says(binary: Path, version: str) -> bool:
    """Whether `binary` is there and says it is toxiproxy-server `version`."""
    if not binary.is_file():
        return False
    try:
        return version_of(binary).rstrip().endswith(version.lstrip("v"))
    except SetupError:
        return False


def _go_env(work: Path) -> dict[str, str]:
    """Go's environment for the build: GOBIN `work`; its module and build caches in `work` when the home folder,
    where Go keeps them by default, cannot be written (and they are not set)."""
    env = {**os.environ, "GOBIN": str(work), "GOFLAGS": "-mod=mod"}
    home = Path.home()
    if not os.access(home if home.exists() else home.parent, os.W_OK):
        env.setdefault("GOPATH", str(work / "gopath"))
        env.setdefault("GOCACHE", str(work / "gocache"))
    return env


def _build(version: str, work: Path) -> Path:
    """The server built with Go into `work`, stamped with its version; SetupError when Go is missing or the build
    fails."""
    go = shutil.which("go")
    if go is None:
        raise SetupError(
            "Go is not on PATH, so the server cannot be built; install Go 1.22+ (https://go.dev/dl/) and put its bin "
            f"folder on PATH, or download toxiproxy-server-linux-amd64 from {RELEASES} and run "
            "`relaychaos setup toxiproxy --from FILE`"
        )
    print(f"relaychaos: building toxiproxy-server {version} with Go (about a minute) ...", flush=True)
    stamp = f"-ldflags=-X {STAMP}={version.lstrip('v')}"
    done = subprocess.run(
        [go, "install", stamp, f"{MODULE}@{version}"], env=_go_env(work), capture_output=True, text=True
    )
    if done.returncode != 0 or not (work / "server").is_file():
        said = done.stderr.strip()[-600:]
        why = (
            "Go could not write a folder it needs (set GOPATH and GOCACHE to folders you can write)"
            if "permission denied" in said.lower()
            else "check the version, and the network to the Go module proxy (GOPROXY)"
        )
        raise SetupError(
            f"`go install {MODULE}@{version}` failed (exit {done.returncode}): {said}; {why}; or download a release "
            f"binary from {RELEASES} and run `relaychaos setup toxiproxy --from FILE`"
        )
    return work / "server"


def version_of(binary: Path) -> str:
    """What `binary -version` says; SetupError when it is not a toxiproxy-server that runs here."""
    try:
        child = subprocess.Popen(
            [str(binary), "-version"],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            start_new_session=True,
        )
    except OSError as e:
        raise SetupError(
            f"{binary} does not run here ({e.strerror}); give a toxiproxy-server binary for this machine "
            f"({platform.system().lower()}-{platform.machine()})"
        ) from None
    try:
        said, _ = child.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        os.killpg(child.pid, signal.SIGKILL)  # it and whatever it started
        child.communicate()
        raise SetupError(f"{binary} -version did not end within 10 s: it is not a toxiproxy-server") from None
    said = said.strip()
    if child.returncode != 0 or "toxiproxy" not in said.lower():
        raise SetupError(f"{binary} -version said {said[:200]!r} (exit {child.returncode}): not a toxiproxy-server")
    return said.splitlines()[0]
