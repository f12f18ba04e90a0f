"""Feedback a student can act on: a relay that cannot start is graded at once with what it printed, every text is
the same on a regrade, and the batch says what it did (merge in place, exit statuses, what was left out).

Each test grades a few submissions on one or two scenarios (`--scenarios`), to keep the project's tests short.
"""

import csv
import json
import os
import re
import subprocess
import sys
import time

import pytest

from relaychaos.reports.student_text import masked

from .conftest import ROOT, derived_relay
from .test_grading import RELAYS, grade, grades_at_once, manifest, records

pytestmark = pytest.mark.stack
LEAKS = re.compile(
    r"/tmp/|/run/relaychaos|/work/|\bgw\d\b|\b[0-9a-f]{12}-[0-9a-f]{8}\b|127\.0\.0\.1:\d|10\.\d+\.\d+\.\d+|"
    r"\bpid \d"
)


def syntax_error(folder):
    manifest(folder, ["python", "relay.py", "serve"], ready_timeout_s=10)
    (folder / "relay.py").write_text("import sys\n\ndef main(:\n    pass\n")
    return folder


def test_a_relay_that_cannot_start_is_graded_within_10_s_with_its_own_output_in_every_format(tmp_path):
    out = tmp_path / "book"
    started = time.monotonic()
    done = grade(syntax_error(tmp_path / "class" / "alice"), "--out", out)
    assert time.monotonic() - started < 10 + 5, "10 s to grade it, and the command's own start"
    assert done.returncode == 1, done.stdout + done.stderr
    (record,) = records(out).values()
    assert record["gradable"] is False and record["execution_time_s"] < 10
    assert record["error"].startswith("could not start: relay 'alice' serve exited with status 1 before answering")
    assert record["error"].endswith("SyntaxError: invalid syntax")
    (folder,) = out.glob("submissions/*")
    gradescope = json.loads((folder / "results.json").read_text())
    assert "def main(:" in gradescope["output"] and "SyntaxError: invalid syntax" in gradescope["output"]
    assert "SyntaxError: invalid syntax" in json.loads((folder / "prairielearn.json").read_text())["output"]
    assert "SyntaxError: invalid syntax" in (folder / "report.html").read_text()
    (row,) = csv.DictReader((out / "gradebook.csv").open())
    assert row["error"].endswith("| last printed: SyntaxError: invalid syntax")
    for text in (gradescope["output"], record["error"]):
        assert not LEAKS.search(text), LEAKS.search(text)


def test_a_regrade_gives_the_same_words_and_none_of_them_names_a_path_port_pid_worker_or_guid(tmp_path):
    """The two grades run at once."""
    texts = []
    outs = [tmp_path / f"book{n}" for n in range(2)]
    scenarios = "happy-path,dropped-response-downstream,race-pairs-two-relays"
    runs = grades_at_once(
        *([RELAYS / "mutants" / "unknown_resent", "--out", out, "--scenarios", scenarios] for out in outs)
    )
    for out, done in zip(outs, runs, strict=True):
        assert done.returncode == 0, done.stdout + done.stderr
        (folder,) = out.glob("submissions/*")
        data = json.loads((folder / "results.json").read_text())
        data.pop("execution_time")
        texts.append(masked(json.dumps(data, indent=1, ensure_ascii=False)))
    assert texts[0] == texts[1]
    assert "### Incident 1: scenario `dropped-response-downstream`" in texts[0]
    assert not LEAKS.search(texts[0]), LEAKS.search(texts[0])


def test_only_folders_are_graded_and_one_holding_relay_toml_one_level_down_is_graded_from_there(tmp_path):
    root = tmp_path / "class"
    derived_relay(root / "carol" / "my-relay", "reference")
    (root / "lost+found").mkdir()
    (root / "roster.csv").write_text("name\ncarol\n")
    out = tmp_path / "book"
    done = grade(*sorted(root.iterdir()), "--out", out, "--scenarios", "happy-path")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr.count("left out, not submissions:") == 1 and "roster.csv (a plain file)" in done.stderr
    (record,) = records(out).values()
    assert record["submission"] == "carol" and record["score"] == 100
    assert "relay.toml was not at the top of the submission but in its folder my-relay/" in " ".join(record["notes"])


def test_merge_in_place_keeps_one_copy_of_each_submission_and_exit_2_when_the_batch_cannot_run(tmp_path):
    out = tmp_path / "book"
    assert grade(RELAYS / "reference", "--out", out, "--scenarios", "happy-path").returncode == 0
    before = sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file())
    for _ in range(2):
        done = subprocess.run(
            [sys.executable, "-m", "relaychaos.commands.cli", "gradebook", "merge", str(out), "--out", str(out)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert done.returncode == 0 and len(done.stderr) < 2000, done.stderr
    assert sorted(p.relative_to(out) for p in out.rglob("*") if p.is_file()) == before
    assert grade("--out", tmp_path / "none").returncode == 2
    assert grade(RELAYS / "reference", "--rubric", tmp_path / "missing.toml").returncode == 2


def test_a_grader_that_cannot_run_gives_no_grade_names_its_error_and_the_batch_exits_2(tmp_path):
    """A relay's faults are verdicts; a run where no scenario finished is the harness's failure (here a
    dependency the installation lacks, one only the suite's pytest run loads: pytest-xdist), so it is no grade,
    not a zero the student is handed."""
    broken = tmp_path / "site" / "xdist"
    broken.mkdir(parents=True)
    (broken / "__init__.py").write_text("raise ModuleNotFoundError(\"No module named 'xdist'\", name='xdist')\n")
    out = tmp_path / "book"
    done = subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "grade", str(RELAYS / "reference"), "--out", str(out)]
        + ["--scenarios", "happy-path"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(broken.parent)},
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert "the batch could not run: the grader failed" in done.stderr
    (record,) = records(out).values()
    assert record["gradable"] is False and record["harness_failed"] is True and record["score"] == 0
    assert "No module named 'xdist'" in record["error"]
