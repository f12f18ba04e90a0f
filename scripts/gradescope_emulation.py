"""Grade one submission as Gradescope's smallest container would: 0.5 CPU, 768 MB, a 10-minute limit.

    .venv/bin/python scripts/gradescope_emulation.py SUBMISSION [--cpus 0.5] [--memory-mib 768]
        [--timeout-s 600] [--root DIR] [-- GRADE_ARGS...]

Lays out a folder as Gradescope's /autograder (ROOT/submission, a copy of SUBMISSION;
ROOT/results/), makes a cgroup v1 `cpu` group (cpu.cfs_quota_us = cpus x cpu.cfs_period_us)
and a `memory` group (memory.limit_in_bytes, and memory.memsw.limit_in_bytes when swap is
accounted, so nothing is swapped out) under this process's own cgroups, runs
`relaychaos grade --gradescope ROOT` inside both (the sandbox makes each relay's groups under
the grade's, so the limits hold for the relays, Toxiproxy and the account system too), kills
it at the time limit as Gradescope would, then reads what it took and removes the groups.
Prints one JSON object: the score, wall seconds, peak memory (memory.max_usage_in_bytes), the
OOM kills (memory.oom_control), the CPU throttling (cpu.stat), whether the limit killed it.
Docker images cannot be pulled on the project's machines: a cgroup is the emulation.
Needs root and the v1 cpu and memory hierarchies (see relaychaos.sandbox.cgroups).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PERIOD_US = 100_000


def own_group(controller: str) -> Path:
    """This process's cgroup folder in the v1 hierarchy holding `controller`."""
    from relaychaos.sandbox.cgroups import hierarchies

    found = hierarchies().get(controller)
    if found is None:
        sys.exit(
            f"gradescope_emulation: no cgroup v1 hierarchy for {controller} is mounted "
            "(see /proc/self/mountinfo); the emulation needs the cpu and memory controllers, as root"
        )
    return found.mount / found.own.lstrip("/")


def make_groups(name: str, cpus: float, memory_mib: int) -> dict[str, Path]:
    groups = {c: own_group(c) / name for c in ("cpu", "memory")}
    for folder in groups.values():
        folder.mkdir()
    (groups["cpu"] / "cpu.cfs_period_us").write_text(str(PERIOD_US))
    (groups["cpu"] / "cpu.cfs_quota_us").write_text(str(int(cpus * PERIOD_US)))
    limit = str(memory_mib << 20)
    (groups["memory"] / "memory.limit_in_bytes").write_text(limit)
    if (groups["memory"] / "memory.memsw.limit_in_bytes").exists():
        (groups["memory"] / "memory.memsw.limit_in_bytes").write_text(limit)
    return groups


def remove_groups(groups: dict[str, Path]) -> None:
    """Kill whatever is left in the groups, then remove them (and any group left below them)."""
    for folder in groups.values():
        for _ in range(50):
            pids = [int(p) for p in (folder / "cgroup.procs").read_text().split()] if folder.exists() else []
            for pid in pids:
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
            if not pids:
                break
            time.sleep(0.1)
        for below in sorted((p for p in folder.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
            below.rmdir()
        if folder.exists():
            folder.rmdir()


def lay_out(submission: Path, root: Path) -> None:
    """ROOT/submission as Gradescope unpacks it, and an empty ROOT/results.

    A student uploads one self-contained folder. A bundled relay whose relay.toml names a `root`
    above it (the Python relays share relay_under_test/run.py) is laid out as such a folder: that
    root's files (without the Go and Java relays), and a relay.toml at its top with the same commands
    (a manifest's commands run in its `root`)."""
    manifest = submission / "relay.toml"
    data = tomllib.loads(manifest.read_text()) if manifest.is_file() else {}
    if "root" not in data:
        shutil.copytree(submission, root / "submission", symlinks=True)
    else:
        code = (submission / data["root"]).resolve()
        shutil.copytree(
            code, root / "submission", symlinks=True, ignore=shutil.ignore_patterns("go", "java", "__pycache__")
        )
        lines = [f"name = {json.dumps(data['name'])}", "[commands]"]  # they run in `root`: its top, here
        lines += [f"{k} = {json.dumps(v)}" for k, v in data["commands"].items()]
        lines += ["[limits]"] + [f"{k} = {json.dumps(v)}" for k, v in data.get("limits", {}).items()]
        (root / "submission" / "relay.toml").write_text("\n".join(lines) + "\n")
    (root / "results").mkdir(parents=True, exist_ok=True)


def measured(groups: dict[str, Path]) -> dict:
    memory, cpu = groups["memory"], groups["cpu"]
    oom = dict(line.split() for line in (memory / "memory.oom_control").read_text().splitlines())
    stat = dict(line.split() for line in (cpu / "cpu.stat").read_text().splitlines())
    return {
        "peak_mib": round(int((memory / "memory.max_usage_in_bytes").read_text()) / 2**20, 1),
        "memory_failcnt": int((memory / "memory.failcnt").read_text()),
        "oom_kills": int(oom.get("oom_kill", 0)),
        "throttled_s": round(int(stat.get("throttled_time", 0)) / 1e9, 1),
        "periods_throttled": int(stat.get("nr_throttled", 0)),
    }


def emulate(
    submission: Path, root: Path, cpus: float, memory_mib: int, timeout_s: float, grade_args: list[str]
) -> dict:
    lay_out(submission, root)
    groups = make_groups(f"relaychaos-gradescope-{os.getpid()}", cpus, memory_mib)
    procs = [groups[c] / "cgroup.procs" for c in ("cpu", "memory")]

    def join() -> None:  # in the child, before exec: the grade and all it starts are in the groups
        for path in procs:
            path.write_text(str(os.getpid()))

    argv = [str(ROOT / ".venv" / "bin" / "relaychaos"), "grade", "--gradescope", str(root), *grade_args]
    started = time.monotonic()
    try:
        with open(root / "autograder.log", "wb") as log:
            proc = subprocess.Popen(
                argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, preexec_fn=join, start_new_session=True
            )
            try:
                rc, killed = proc.wait(timeout=timeout_s), False
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                rc, killed = proc.wait(), True
        wall = time.monotonic() - started
        figures = measured(groups)
    finally:
        remove_groups(groups)
    results = root / "results" / "results.json"
    data = json.loads(results.read_text()) if results.exists() else {}
    return {
        "submission": submission.name,
        "score": data.get("score"),
        "exit": rc,
        "killed_at_limit": killed,
        "wall_s": round(wall, 1),
        "cpus": cpus,
        "memory_mib": memory_mib,
        **figures,
        "results": str(results),
        "log": str(root / "autograder.log"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("submission", type=Path)
    parser.add_argument("--cpus", type=float, default=0.5)
    parser.add_argument("--memory-mib", type=int, default=768)
    parser.add_argument("--timeout-s", type=float, default=600.0, help="Gradescope's limit (default 10 minutes)")
    parser.add_argument("--root", type=Path, help="the /autograder-like folder (default: a new temporary one)")
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)
    parser.epilog = "After --: more `relaychaos grade` options, passed as they are."
    args = parser.parse_args(argv[:cut])
    if os.geteuid() != 0:
        sys.exit("gradescope_emulation: making cgroups needs root")
    root = args.root or Path(tempfile.mkdtemp(prefix="autograder-"))
    print(
        json.dumps(
            emulate(args.submission.resolve(), root, args.cpus, args.memory_mib, args.timeout_s, argv[cut + 1 :])
        )
    )


if __name__ == "__main__":
    main()
