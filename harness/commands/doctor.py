"""`relaychaos doctor`: each part a run needs and each sandbox layer and route this machine offers, with the fix for
each that is missing, in the words of whoever runs it (a checkout's user, or an installed harness's).

    relaychaos doctor        # exit 0: a run can start here (a Toxiproxy server is found); 1: it cannot

A part is `ok`, `missing` (with why and the fix) or, for what only some relays need, `optional`.
"""

from __future__ import annotations

import argparse
import platform
from dataclasses import dataclass
from pathlib import Path

import relaychaos
from relaychaos import options
from relaychaos.commands.setup import SetupError, version_of
from relaychaos.errors import HarnessError, ToxiproxyError
from relaychaos.sandbox import levels
from relaychaos.stack import postgres, toxiproxy_docker, toxiproxy_reach, toxiproxy_server
from relaychaos.stack.toxiproxy_control import Toxiproxy

NOT_ROOT_FIX = "run the harness as root (sudo)"
LAYER_FIX = {
    **dict.fromkeys(("uid", "mount", "pid", "ipc", "uts", "disk"), NOT_ROOT_FIX),
    "network": "iproute2 and nftables (`apt-get install -y iproute2 nftables`)",
    "cgroups": "the cgroup v1 memory, pids and cpu controllers mounted (cgroup v2 is not supported yet)",
    "landlock": "a Linux kernel 5.13+ with Landlock enabled (lsm=landlock)",
    "landlock network rules": "a Linux kernel 6.7+",
    "landlock scoping": "a Linux kernel 6.12+",
    "seccomp": "an x86_64 machine",
}


@dataclass(frozen=True)
class Finding:
    """One part or layer: its name, ok/missing/optional, what was found or why not, and the fix."""

    name: str
    state: str
    said: str
    fix: str = ""

    def lines(self) -> list[str]:
        head = f"  {self.state:<8} {self.name}: {self.said}"
        return [head] + ([f"           fix: {self.fix}"] if self.fix and self.state != "ok" else [])


def add_parsers(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    doctor = sub.add_parser("doctor", help="list what a run needs and what this machine offers, with the fixes")
    doctor.set_defaults(func=cmd_doctor)


def cmd_doctor(args: argparse.Namespace) -> int:
    where = "a checkout" if toxiproxy_server.in_checkout() else "an installed package"
    print(f"relaychaos {relaychaos.version()} ({where}) on Python {platform.python_version()}, {platform.platform()}")
    needed = toxiproxy()
    print("what a run needs:")
    for finding in needed:
        print("\n".join(finding.lines()))
    print("the sandbox (docs/sandbox.md; `--sandbox auto` runs with what is here and says what is not):")
    for finding in sandbox():
        print("\n".join(finding.lines()))
    print("what some relays need:")
    for finding in (docker(), postgresql()):
        print("\n".join(finding.lines()))
    ready = all(f.state == "ok" for f in needed)
    print(f"relaychaos: {'a run can start here' if ready else 'a run cannot start here: see the fix above'}")
    return 0 if ready else 1


def toxiproxy() -> list[Finding]:
    """The Toxiproxy server a run would use, by the route RELAYCHAOS_TOXIPROXY chooses, tried as the run would."""
    try:
        route = toxiproxy_server.route()
    except HarnessError as e:
        return [Finding("toxiproxy", "missing", e.what, e.fix or "")]
    url = options.environment(options.TOXIPROXY_URL)
    if url and route == "auto":
        try:
            toxiproxy_reach.reach()
        except HarnessError as e:
            return [Finding("toxiproxy", "missing", e.what, e.fix or "")]
        return [_answers(url)]
    forced = (
        f"RELAYCHAOS_TOXIPROXY={route} tries this route alone{' (TOXIPROXY_URL is not used)' if url else ''}, and "
        if route != "auto"
        else ""
    )
    unforce = "; or unset RELAYCHAOS_TOXIPROXY" if forced else ""
    binary = toxiproxy_server.find_binary() if route != "docker" else None
    if binary:
        try:
            said = version_of(Path(binary))
        except SetupError as e:
            return [
                Finding(
                    "toxiproxy",
                    "missing",
                    f"{binary} is the toxiproxy-server a run would start, and it does not work: {e}",
                    f"remove it, or put a working one before it on PATH ({toxiproxy_server.build_fix()})",
                )
            ]
        return [Finding("toxiproxy", "ok", f"{binary} ({said}; route {route})")]
    places = " or ".join(map(str, toxiproxy_server.search_dirs()))
    if route == "binary":
        return [
            Finding(
                "toxiproxy",
                "missing",
                f"{forced}no toxiproxy-server is on PATH or in {places}",
                toxiproxy_server.build_fix() + unforce,
            )
        ]
    reason = toxiproxy_docker.unavailable_reason()
    if reason is None:
        return [Finding("toxiproxy", "ok", "no binary; a Docker daemon answers, so each run starts a container")]
    if route == "docker":
        return [Finding("toxiproxy", "missing", f"{forced}{reason}", toxiproxy_docker.DAEMON_FIX + unforce)]
    return [
        Finding(
            "toxiproxy",
            "missing",
            f"no toxiproxy-server on PATH or in {places}, no TOXIPROXY_URL, and no Docker route ({reason})",
            toxiproxy_server.install_fix(),
        )
    ]


def _answers(url: str) -> Finding:
    """TOXIPROXY_URL's server, asked its version as a run asks it (relaychaos.stack.toxiproxy_control)."""
    try:
        said = Toxiproxy(url).version()
    except (ToxiproxyError, ValueError) as e:  # ValueError: not a URL
        return Finding(
            "toxiproxy",
            "missing",
            f"TOXIPROXY_URL={url} does not answer ({e.what if isinstance(e, ToxiproxyError) else e})",
            "start the server there (or correct the URL), or unset TOXIPROXY_URL so that the harness starts its own",
        )
    return Finding("toxiproxy", "ok", f"TOXIPROXY_URL={url} answers (version {said})")


def sandbox() -> list[Finding]:
    """Each layer: enforced, or why it is not and how to get it; the layers missing for one reason in one finding
    (not root: eight of them), and what a run does without them."""
    try:
        without = toxiproxy_reach.sandbox_without(toxiproxy_reach.reach())  # a server on another host: no network
    except HarnessError:
        without = {}  # said under what a run needs
    lacks, abi = levels.lacking("auto", without)
    level = levels.level("auto", levels.Limits(), lacks, abi)
    found = [Finding(name, "ok", said) for name, said in level["layers"].items()]
    by_reason: dict[str, list[str]] = {}
    for name, why in lacks.items():
        by_reason.setdefault(why, []).append(name)
    for why, names in by_reason.items():
        fix = NOT_ROOT_FIX if "root" in why else "; ".join(dict.fromkeys(LAYER_FIX.get(n, "") for n in names))
        found.append(Finding(", ".join(names), "missing", why, fix))
    if lacks:
        found.append(
            Finding(
                "without them",
                "note",
                f"a run goes on with the {len(level['layers'])} layers marked ok (`--sandbox auto`: fine for "
                "your own relay, less isolation for code you do not trust); `--sandbox strict` refuses to run",
            )
        )
    return found


def docker() -> Finding:
    reason = toxiproxy_docker.unavailable_reason()
    if reason is None:
        return Finding("docker", "ok", "a Docker daemon answers (relays run from container images; Toxiproxy's route)")
    return Finding(
        "docker",
        "optional",
        f"{reason}: needed only for a relay run from a container image",
        f"as root, `bash {toxiproxy_docker.SETUP_SCRIPT}` starts a daemon"
        if toxiproxy_server.in_checkout()
        else "install Docker (`apt-get install -y docker.io`) and start its daemon",
    )


def postgresql() -> Finding:
    try:
        return Finding("postgresql", "ok", f"{postgres.binaries()} (for a relay whose ledger is in PostgreSQL)")
    except HarnessError as e:
        return Finding("postgresql", "optional", f"{e.what}: needed only for a ledger in PostgreSQL", e.fix or "")
