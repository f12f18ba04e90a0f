"""Gradescope's smallest container (0.5 CPU, 768 MB): `--workers auto` fits the CPU a grade is given,
a grade given less says so before anything runs, and a correct relay graded inside the emulation
(scripts/gradescope_emulation.py: a cgroup v1 of that size) keeps full marks with no OOM kill.

The class inside the emulation, against the class on free cores, is benchmarks/gradescope_class.py.
"""

import json
import os
import subprocess
import sys

import pytest

from relaychaos.errors import HarnessError
from relaychaos.grading.capacity import MIN_CPUS, MIN_MEMORY_MIB, Capacity, budget_s, warnings, workers
from relaychaos.sandbox import cgroups

from .conftest import ROOT

EMULATION = ROOT / "scripts" / "gradescope_emulation.py"
NEEDS_CGROUPS = pytest.mark.skipif(
    os.geteuid() != 0 or not {"cpu", "memory"} <= set(cgroups.hierarchies()),
    reason="the emulation makes cgroup v1 cpu and memory groups: it needs root and both hierarchies mounted",
)


def emulate(tmp_path, *grade_args, cpus=0.5, memory_mib=768) -> dict:
    done = subprocess.run(
        [
            sys.executable,
            str(EMULATION),
            str(ROOT / "relay_under_test" / "reference"),
            "--root",
            str(tmp_path / "autograder"),
            "--cpus",
            str(cpus),
            "--memory-mib",
            str(memory_mib),
            "--timeout-s",
            "600",
            "--",
            *grade_args,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=700,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def test_auto_workers_fit_the_cpu_a_grade_is_given():
    assert workers("auto", Capacity(cpus=4, memory_mib=None)) == 3
    assert workers("auto", Capacity(cpus=1, memory_mib=None)) == 2
    assert workers("auto", Capacity(cpus=0.5, memory_mib=768)) == 1
    assert workers("2", Capacity(cpus=0.5, memory_mib=768)) == 2  # a number is taken as given


def test_the_auto_budget_follows_the_cpu_and_fits_gradescopes_10_minutes():
    assert budget_s("auto", Capacity(cpus=2, memory_mib=None)) == budget_s("auto", Capacity(4, None)) == 120
    assert budget_s("auto", Capacity(cpus=1, memory_mib=None)) == 240
    assert budget_s("auto", Capacity(cpus=0.5, memory_mib=768)) == 480, "within Gradescope's 10 minutes"
    assert budget_s("300", Capacity(cpus=0.5, memory_mib=768)) == 300  # seconds are taken as given
    with pytest.raises(HarnessError, match="neither a positive number of seconds nor auto"):
        budget_s("soon")


def test_gradescopes_smallest_container_is_enough_and_less_is_said_up_front():
    assert warnings(Capacity(cpus=MIN_CPUS, memory_mib=MIN_MEMORY_MIB)) == []
    cpu, memory = warnings(Capacity(cpus=0.25, memory_mib=512))
    assert "0.25 CPU" in cpu and f"at least {MIN_CPUS:g} CPU" in cpu and "docs/grading.md" in cpu
    assert "512 MiB" in memory and f"at least {MIN_MEMORY_MIB} MiB" in memory


@NEEDS_CGROUPS
@pytest.mark.process
def test_a_grade_in_a_smaller_cgroup_says_what_is_short_before_anything_runs(tmp_path):
    """The grade stops at once on a rubric that does not exist: what it printed before is the warning."""
    got = emulate(tmp_path, "--rubric", str(tmp_path / "no-such-rubric.toml"), cpus=0.25, memory_mib=512)
    log = (tmp_path / "autograder" / "autograder.log").read_text()
    assert "this grade has 0.25 CPU (its cgroup's quota)" in log, log
    assert "this grade has 512 MiB of memory (its cgroup's limit)" in log, log
    assert got["oom_kills"] == 0 and not got["killed_at_limit"]


@NEEDS_CGROUPS
@pytest.mark.stack
def test_a_correct_relay_keeps_full_marks_in_gradescopes_smallest_container(tmp_path):
    got = emulate(tmp_path, "--scenarios", "happy-path,race-pairs-two-relays")
    log = (tmp_path / "autograder" / "autograder.log").read_text()
    assert got["score"] == 100, log
    assert got["oom_kills"] == 0 and not got["killed_at_limit"] and got["peak_mib"] < 768, got
    assert "this grade has" not in log, log  # 0.5 CPU and 768 MiB are enough: nothing said up front
    assert got["periods_throttled"] > 0, got  # the quota was there, and held the grade to it
