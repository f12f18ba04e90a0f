"""`relaychaos grade`: a class graded end to end, bad submissions as graded outcomes, stable regrades,
shards that merge into the same gradebook, and Ctrl-C leaving a valid partial one.

Each test grades a few submissions on two or three scenarios (`--scenarios`), to keep the
project's tests short; the full class benchmark is benchmarks/grade_class.py.
"""

import csv
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .conftest import ROOT, derived_relay
from .schema_check import problems

pytestmark = pytest.mark.stack
RELAYS = ROOT / "relay_under_test"
QUICK = "happy-path,dropped-response-to-channel"


def grade(*args, timeout=600):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "grade", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def grades_at_once(*runs: list, timeout=600) -> list[subprocess.CompletedProcess]:
    """`relaychaos grade` with each list of arguments, all started together (as a CI matrix runs them)."""
    started = [
        subprocess.Popen(
            [sys.executable, "-m", "relaychaos.commands.cli", "grade", *map(str, args)],
            cwd=ROOT,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for args in runs
    ]
    done = []
    for proc in started:
        out, err = proc.communicate(timeout=timeout)
        done.append(subprocess.CompletedProcess(proc.args, proc.returncode, out, err))
    return done


def records(out: Path) -> dict[str, dict]:
    return {r["submission"]: r for r in (json.loads(p.read_text()) for p in out.glob("submissions/*/grade.json"))}


def manifest(folder: Path, serve: list[str], ready_timeout_s: float = 1) -> Path:
    folder.mkdir(parents=True)
    cmd = json.dumps(serve)
    (folder / "relay.toml").write_text(
        f'name = "{folder.name}"\n[commands]\nserve = {cmd}\nresolve = {cmd}\n'
        f"reprocess = {cmd}\npurge = {cmd}\n[limits]\nready_timeout_s = {ready_timeout_s}\n"
    )
    return folder


@pytest.fixture
def bad_class(tmp_path):
    """Submissions a class really hands in: none, a missing program, one that never answers, odd names."""
    root = tmp_path / "class"
    (root / "no manifest").mkdir(parents=True)
    manifest(root / "missing-program", ["./relay-binary", "serve"])
    manifest(root / "never ready ü", ["python", "-c", "import time; time.sleep(600)"])
    derived_relay(root / "base", "base")
    return root


def test_a_class_is_graded_and_every_bad_submission_is_a_graded_outcome(tmp_path, bad_class):
    out = tmp_path / "book"
    done = grade(
        RELAYS / "reference",
        *sorted(bad_class.iterdir()),
        "--out",
        out,
        "--scenarios",
        QUICK + ",stateful",
        "--budget-s",
        90,
    )
    assert done.returncode == 1, "some could not be graded: " + done.stdout + done.stderr
    assert "3 could not be graded (a 0 each, the reason in the gradebook)" in done.stderr
    got = records(out)
    assert got["reference"]["score"] == 100 and got["reference"]["stateful"]["ran"]
    # on these few scenarios base shows a double debit, capped at 80 (over every scenario it is at most 40:
    # tests/test_grading_rules.py); the other items no scenario here exercises keep their points
    assert 0 < got["base"]["score"] <= 80 and got["base"]["stateful"]["why_not"].startswith(
        "a named scenario had already shown a bug"
    )
    assert got["no manifest"]["gradable"] is False and "no relay.toml" in got["no manifest"]["error"]
    assert got["missing-program"]["score"] == 0 and got["missing-program"]["gradable"] is False
    assert (
        got["missing-program"]["error"].startswith("could not start:")
        and "relay-binary" in got["missing-program"]["error"]
    )
    assert got["never ready ü"]["score"] == 0 and "/health" in got["never ready ü"]["error"]
    for folder in out.glob("submissions/*"):  # real outputs, against the published schemas
        assert problems("grade", json.loads((folder / "grade.json").read_text())) == [], folder
        assert problems("gradescope-results", json.loads((folder / "results.json").read_text())) == [], folder
        assert problems("prairielearn-results", json.loads((folder / "prairielearn.json").read_text())) == [], folder
        if (folder / "suite.json").exists():  # the run's own results.json (none when the relay had no manifest)
            assert problems("results", json.loads((folder / "suite.json").read_text())) == [], folder
    rows = list(csv.DictReader((out / "gradebook.csv").open()))
    assert sorted(r["submission"] for r in rows) == sorted(got)
    assert "<svg" in (out / "gradebook.html").read_text()


def test_a_grade_cut_at_its_budget_is_not_scored_and_says_how_far_it_got(tmp_path):
    """How far a run gets depends on the machine: the scenarios left would decide the score, so there is none."""
    out = tmp_path / "book"
    done = grade(
        RELAYS / "reference",
        "--out",
        out,
        "--scenarios",
        QUICK + ",race-32-one-relay,stateful",
        "--budget-s",
        4,
        "--workers",
        1,
    )
    assert done.returncode == 1, "not every submission was graded: " + done.stdout + done.stderr
    got = records(out)["reference"]
    assert got["gradable"] is False and got["timed_out"] is True
    assert got["error"].startswith("ran out of time: the grading budget of 4 s ended after ") and got["error"].endswith(
        "of 3 scenarios (a grade cut short is not scored: the instructor regrades it with a larger --budget-s)"
    )
    results = json.loads(next(out.glob("submissions/*/results.json")).read_text())
    assert results["score"] == 0 and "This is not a score" in results["output"]
    assert json.loads(next(out.glob("submissions/*/prairielearn.json")).read_text())["gradable"] is False


MUTANT = RELAYS / "mutants" / "unknown_resent"


def test_a_regrade_with_the_same_seed_gives_the_same_score_however_far_shrinking_got(tmp_path):
    """The machine alone grades the mutant here: with seed 3 it finds the bug at its fourth example. (A relay the
    machine finds nothing in scores the same on every grade: test_a_class_is_graded_..., the reference at 100.)

    The second grade, run beside the first, may shrink for 0.01 s only: the story shown is cut short, the grade is not.
    """
    scores, machine = [], []
    outs = [tmp_path / f"book{n}" for n in range(2)]
    runs = grades_at_once(
        *(
            [MUTANT, "--out", out, "--scenarios", "stateful", "--seed", 3, "--shrink-s", shrink_s]
            for out, shrink_s in zip(outs, (10, 0.01), strict=True)
        )
    )
    for out, done in zip(outs, runs, strict=True):
        assert done.returncode == 0, done.stdout + done.stderr
        (record,) = records(out).values()
        assert record["seed"] == 3
        scores.append(
            (
                record["score"],
                [(e["item"], e["points"]) for e in record["items"]],
                [(s["name"], s["outcome"], sorted(v["rule"] for v in s["verdicts"])) for s in record["scenarios"]],
            )
        )
        machine.append((record["stateful"], next(s for s in record["scenarios"] if s["name"] == "stateful")))
    assert scores[0] == scores[1]
    assert scores[0][0] < 100, scores[0]
    (full, _), (cut, shown) = machine
    # Past its budget shrinking runs nothing: each candidate is decided from the stories already run.
    # With 0.01 s, at most the candidate Hypothesis begins within that time (about 1 ms after the
    # failure on an idle machine) runs for real. (How long the cut takes is a figure, not a rule here:
    # docs/performance.md.)
    assert cut["examples_after_failure"] <= 1, machine
    assert full["examples_after_failure"] >= 1, machine  # 10 s: the candidates it shrinks through run
    assert cut["shrunk"] is False and cut["shrink_s"] >= 0.01, machine
    story = next(i["text"] for i in record["incidents"] if i["scenario"] == "stateful")
    assert "not fully shrunk: the time budget ended the shrinking" in story, story
    assert "steps" in story and "the grade counts the first failing example" in story


def test_three_shards_merged_equal_one_unsharded_run(tmp_path):
    """The three shards run at once, as a CI matrix runs them, beside the unsharded grade."""
    subs = [RELAYS / "reference", RELAYS / "base", RELAYS / "mutants" / "check_then_insert"]
    whole = tmp_path / "whole"
    shards = [["--out", tmp_path / f"shard{i}", "--shard", f"{i}/3"] for i in range(3)]
    for done in grades_at_once(*([*subs, *args, "--scenarios", QUICK] for args in [["--out", whole], *shards])):
        assert done.returncode == 0, done.stdout + done.stderr
    merged = tmp_path / "merged"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "gradebook",
            "merge",
            *[tmp_path / f"shard{i}" for i in range(3)],
            "--out",
            merged,
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert [len(records(tmp_path / f"shard{i}")) for i in range(3)] == [1, 1, 1]
    assert (merged / "gradebook.csv").read_text() == (whole / "gradebook.csv").read_text()


@pytest.mark.parametrize("stop", [signal.SIGINT, signal.SIGTERM], ids=["ctrl-c", "sigterm"])
def test_ctrl_c_or_sigterm_leaves_a_valid_partial_gradebook_and_nothing_running(tmp_path, stop):
    """SIGTERM is what a cancelled CI job or `docker stop` sends: it stops a grade as Ctrl-C does."""
    out = tmp_path / "book"
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "relaychaos.commands.cli",
            "grade",
            str(RELAYS / "base"),
            str(RELAYS / "reference"),
            str(RELAYS / "go"),
            "--out",
            str(out),
            "--scenarios",
            QUICK,
        ],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not list(out.glob("submissions/*/grade.json")) and time.monotonic() < deadline:
        time.sleep(0.2)
    time.sleep(2)  # into the second submission
    proc.send_signal(stop)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    rows = list(csv.DictReader((out / "gradebook.csv").open()))
    assert [r["submission"] for r in rows] == ["base"]
    left = subprocess.run(["pgrep", "-af", str(out)], capture_output=True, text=True).stdout
    assert left.strip() == "", f"left running: {left}"


@pytest.mark.parametrize("platform, folder", [("gradescope", "submission"), ("prairielearn", "student")])
def test_in_a_grading_platform_s_folders_the_results_land_where_it_reads_them(tmp_path, platform, folder):
    root = tmp_path / platform
    derived_relay(root / folder, "base")
    done = grade(f"--{platform}", root, "--scenarios", QUICK)
    assert done.returncode == 0, done.stdout + done.stderr
    results = json.loads((root / "results" / "results.json").read_text())
    assert problems(f"{platform}-results", results) == []
    assert (results["score"] if platform == "gradescope" else results["score"] * 100) < 100
