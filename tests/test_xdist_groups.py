"""make test's `--dist loadgroup` keeps each xdist_group on one worker (the red team's batch is graded once, the wheel
built once): pytest 9.2 with pytest-xdist 3.8 silently spreads a group over every worker (pytest-xdist issue 1386), so
this fails wherever the installed pair does that, before a batch is graded twice at once."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.process

GROUPED = """
import os
import pytest

pytestmark = pytest.mark.xdist_group("one")


@pytest.mark.parametrize("i", range(6))
def test_grouped(i):
    with open(os.environ["WORKERS_SEEN"], "a") as f:
        f.write(os.environ["PYTEST_XDIST_WORKER"] + "\\n")
"""


def test_a_group_runs_on_one_worker(tmp_path):
    (tmp_path / "test_grouped.py").write_text(GROUPED)
    seen = tmp_path / "workers"
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "3", "--dist", "loadgroup", "."],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "WORKERS_SEEN": str(seen)},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workers = seen.read_text().split()
    assert len(workers) == 6 and len(set(workers)) == 1, (
        f"an xdist_group ran on workers {sorted(set(workers))}: --dist loadgroup does not group with pytest "
        f"{pytest.__version__} (pytest-xdist issue 1386); fix: install pytest below 9.2 (scripts/bootstrap.sh does)"
    )
