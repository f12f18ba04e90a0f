"""`relaychaos setup toxiproxy`: a working toxiproxy-server where the harness finds it, for an installed harness.

    relaychaos setup toxiproxy               # builds it with Go (go install ...@v2.12.0), renamed
    relaychaos setup toxiproxy --from FILE   # or takes a binary you have (a release's toxiproxy-server-linux-amd64)
    relaychaos setup toxiproxy --dest DIR    # somewhere else (then DIR on PATH, or RELAYCHAOS_TOOLS_BIN=DIR)

The default place is relaychaos.stack.toxiproxy_server.user_bin(), which the harness searches after PATH. The
binary is checked before it is put there: it must run and say its version.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from relaychaos.stack import toxiproxy_server

MODULE = "github.com/Shopify/toxiproxy/v2/cmd/server"
RELEASES = "https://github.com/Shopify/toxiproxy/releases"


class SetupError(Exception):
    """What went wrong, and the fix, in one message."""


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    setup = sub.add_parser("setup", help="install what the harness needs: a Toxiproxy server")
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


def cmd_setup_toxiproxy(args: argparse.Namespace) -> int:
    dest = Path(args.dest) if args.dest else toxiproxy_server.user_bin()
    try:
        with tempfile.TemporaryDirectory(prefix="relaychaos-setup-") as work:
            built = Path(args.source) if args.source else _build(args.version, Path(work))
            said = _version(built)
            dest.mkdir(parents=True, exist_ok=True)
            target = dest / "toxiproxy-server"
            shutil.copyfile(built, target)
            os.chmod(target, 0o755)
    except (SetupError, OSError) as e:
        print(f"relaychaos: setup toxiproxy: {e}", file=sys.stderr)
        return 2
    found = toxiproxy_server.find_binary()
    where = (
        "the harness finds it there"
        if found and Path(found).resolve() == target.resolve()
        else f"put {dest} on PATH or set RELAYCHAOS_TOOLS_BIN={dest} so that the harness uses it"
        + (f" (it finds {found} first now)" if found else "")
    )
    print(f"relaychaos: {target} ({said}): {where}")
    return 0


def _build(version: str, work: Path) -> Path:
    """The server built with Go into `work`; SetupError when Go is missing or the build fails."""
    go = shutil.which("go")
    if go is None:
        raise SetupError(
            "Go is not on PATH, so the server cannot be built; install Go 1.22+ (https://go.dev/dl/), or download "
            f"toxiproxy-server-linux-amd64 from {RELEASES} and run `relaychaos setup toxiproxy --from FILE`"
        )
    env = {**os.environ, "GOBIN": str(work), "GOFLAGS": "-mod=mod"}
    print(f"relaychaos: building toxiproxy-server {version} with Go (about a minute, once) ...", flush=True)
    done = subprocess.run([go, "install", f"{MODULE}@{version}"], env=env, capture_output=True, text=True)
    if done.returncode != 0 or not (work / "server").is_file():
        raise SetupError(
            f"`go install {MODULE}@{version}` failed (exit {done.returncode}): {done.stderr.strip()[-600:]}; "
            f"check the network to the Go module proxy (GOPROXY), or download a release binary from {RELEASES} "
            "and run `relaychaos setup toxiproxy --from FILE`"
        )
    return work / "server"


def _version(binary: Path) -> str:
    """What `binary -version` says; SetupError when it is not a toxiproxy-server that runs here."""
    if not binary.is_file():
        raise SetupError(f"{binary} is not a file; give the path of a toxiproxy-server binary")
    try:
        done = subprocess.run([str(binary), "-version"], capture_output=True, text=True, timeout=10)
    except OSError as e:
        raise SetupError(
            f"{binary} does not run here ({e.strerror}); give a binary for this machine (linux-amd64)"
        ) from None
    except subprocess.TimeoutExpired:
        raise SetupError(f"{binary} -version did not end within 10 s: it is not a toxiproxy-server") from None
    said = (done.stdout + done.stderr).strip()
    if done.returncode != 0 or "toxiproxy" not in said.lower():
        raise SetupError(f"{binary} -version said {said[:200]!r} (exit {done.returncode}): not a toxiproxy-server")
    return said.splitlines()[0]
