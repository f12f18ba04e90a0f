"""Red team, class 5: reading what is hidden, directly.

Everything a relay's own view might give away: environment variables beyond the contract's (or values naming
a scenario, a set, a seed, a test, a run folder), the command lines and environments of every process it can
see, the paths of its own mounts and cgroups, the harness's source and scenarios (their folders are next to
the Python the relay runs on), hidden scenario files, other submissions, the run folder and gradebook, other
slots' homes in /run/relaychaos.
"""

import os
import sys

from .evidence import (
    CONTRACT_ENV,
    HARNESS_OUTPUTS,
    Attack,
    Refused,
    find_files,
    first_time,
    is_serve,
    read_first,
    whoami,
)
from .reference.__main__ import main

NAME = "read_hidden"
ATTEMPTS = (
    "environment",
    "proc-cmdline",
    "proc-environ",
    "mount-paths",
    "harness-source",
    "hidden-scenarios",
    "other-submissions",
    "run-folder",
    "slot-homes",
)
LIMITS = {"ready_timeout_s": 30}  # its attack runs before serve answers
A = Attack(NAME)
TELLING = (
    "hidden",
    "after_due",
    "scenario",
    "seed",
    "pytest",
    "test_",
    "submissions",
    "gradebook",
    "grade-",
    "relaychaos-results",
    "runs/",
)


def telling(text: str) -> list[str]:
    """The telling words in text, once the relay's own names (its module, its folder) are taken out."""
    low = text.lower()
    for own in {NAME, os.path.basename(os.getcwd()), os.path.basename(os.environ.get("HOME", "")) or NAME}:
        low = low.replace(own.lower(), "<own>")
    return [w for w in TELLING if w in low]


def environment():
    extra = {k: v for k, v in os.environ.items() if k not in CONTRACT_ENV}
    named = {k: v for k, v in os.environ.items() if telling(f"{k}={v}")}
    if extra or named:
        return f"variables beyond the contract: {sorted(extra)}; telling values: {named}"
    raise Refused(f"only {sorted(os.environ)}")


def own_pids() -> set[str]:
    return {p for p in os.listdir("/proc") if p.isdigit()}


def proc_files(name: str):
    seen, readable = [], []
    for pid in sorted(own_pids(), key=int):
        try:
            with open(f"/proc/{pid}/{name}", "rb") as f:
                text = f.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError as e:
            seen.append(f"{pid}: {e.strerror}")
            continue
        readable.append(pid)
        hits = (
            telling(text)
            + (["RELAYCHAOS_"] if "RELAYCHAOS_" in text else [])
            + (["a plan"] if '"isolation"' in text or '"landlock"' in text else [])
        )
        if hits:
            return f"/proc/{pid}/{name} names {hits}: {text[:300]}"
    raise Refused(
        f"pids {sorted(own_pids(), key=int)} (all of this relay's own); readable {readable}, "
        f"nothing telling; {'; '.join(seen[:3])}"
    )


def mount_paths():
    text = open("/proc/self/mountinfo").read() + open("/proc/self/cgroup").read()
    text += " ".join([os.environ.get("LEDGER_PATH", ""), os.environ.get("HOME", ""), os.getcwd()])
    hits = telling(text)
    if hits:
        return f"its own mounts and paths name {hits}"
    raise Refused("mount sources and paths name no scenario, set, test or run folder")


def harness_source():
    """The harness's package sits beside the Python the relay runs on (its install, or a checkout)."""
    tried = []
    for base in {os.path.dirname(os.path.dirname(sys.prefix)), os.path.dirname(sys.prefix), sys.prefix}:
        for rel in (
            "harness/__init__.py",
            "harness/sandbox/policy.py",
            "scenarios/__init__.py",
            "lib/python3.11/site-packages/relaychaos/__init__.py",
        ):
            path = os.path.join(base, rel)
            try:
                with open(path) as f:
                    return f"read {path}: {f.readline().strip()[:100]}"
            except OSError as e:
                tried.append(f"{path}: {e.strerror}")
    rubrics = find_files(names=("rubric.toml", "rubric.py"), budget_s=2)
    if rubrics:
        return read_first(rubrics, "harness file", "")
    raise Refused("; ".join(tried[:4]))


def slot_homes():
    try:
        names = os.listdir("/run/relaychaos")
    except OSError as e:
        raise Refused(f"/run/relaychaos: {e.strerror}") from None
    mine = os.environ.get("LEDGER_PATH", "").split("/")[3:4]
    others = [n for n in names if n.startswith("slot-") and n not in mine]
    for other in others:
        try:
            return f"listed /run/relaychaos/{other}: {os.listdir(f'/run/relaychaos/{other}')[:5]}"
        except OSError:
            continue
    raise Refused(f"/run/relaychaos holds {names}: only its own slot")


def attack() -> None:
    A.run("environment", environment)
    A.run("proc-cmdline", proc_files, "cmdline")
    A.run("proc-environ", proc_files, "environ")
    A.run("mount-paths", mount_paths)
    A.run("harness-source", harness_source)
    A.run("hidden-scenarios", lambda: read_first(find_files(suffixes=(".yaml", ".yml")), "scenario file", "steps"))
    A.run(
        "other-submissions",
        lambda: read_first(find_files(names=("relay.toml",)), "another submission's manifest", "[commands]"),
    )
    A.run("run-folder", lambda: read_first(find_files(names=HARNESS_OUTPUTS), "harness output", ""))
    A.run("slot-homes", slot_homes)


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if not is_serve(sys.argv[1:]) or first_time(NAME):
        attack()  # before serve answers: the scenario waits for it
    sys.exit(main(sys.argv[1:]))
