"""Imported incidents, replayed on real stacks: the night and its story break the rules production broke, for the GUIDs
production broke them for, with production's answers and account calls, on the relay with that bug, on every replay
(the last on a loaded machine: beside a CPU burner, unless other work loads it); the story holds on every correct
relay, the night on the reference (the night holds
every step of its story, and each correct relay meets the story); the story is shrunk against that relay and
replays in seconds (the import has already replayed the shrunk story CONFIRM_RUNS times on that relay and once on
each relay of its holds_on before it wrote it, so those replays are not repeated here); `incident verify` says
whether a relay reproduces the incident; the timeline opens on the violation, with the ledger's SENT→FAILED in view.

The stranger-* bundles were written from docs/incident-bundle.md alone, by someone who had not read the importer, as
three production stacks would log three incidents; each folder's NOTES.md tells the story and names the bundled
mutant that should reproduce it (its incident.toml names that mutant by an absolute path of the machine it was
written on, so the import here is given --relay)."""

import os
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from relaychaos.commands.cli import main
from relaychaos.engine import scenario_file
from relaychaos.incidents.verify import reproduced
from relaychaos.reports.timeline_model import build

from .conftest import REFERENCE, ROOT
from .test_correct_relays import CORRECT

pytestmark = pytest.mark.stack

EXAMPLES = ROOT / "examples" / "incidents"
MUTANTS = ROOT / "relay_under_test" / "mutants"
BUNDLES = {
    "reprocess-resent-timeouts": "reprocess_unknown",
    "check-then-insert-burst": "check_then_insert",
    "oom-early-resolve": "resolve_ignores_min_age",
    "stranger-cbs-slowdown-e902-resend": "timeout_as_failed",
    "stranger-k8s-deploy-write-after-call": "write_after_call",
    "stranger-lb-blip-memory-ledger-restart": "memory_ledger",
}
STORY_WITHIN_S = 10.0
RUNS = {"night": 2, "story": 2}  # each scenario's replays on the relay with the bug, the last on a loaded machine
NIGHT_HOLDS_ON = ("reference",)  # the correct relays the whole night is replayed on; the story, on every one


@contextmanager
def cpu_load(burners: int = 1):
    """A loaded machine for the block: CPU burners (python3 -c 'while True: pass'), each ended by its own pid, unless
    the machine already runs a process per core (a load average of at least the cores: `make test`'s other workers),
    where a burner would only slow the suite."""
    loaded = os.getloadavg()[0] >= (os.cpu_count() or 1)
    procs = [] if loaded else [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(burners)]
    try:
        yield
    finally:
        for p in procs:
            p.kill()
            p.wait()


def broken(result, scenario):
    """The (rule, label) pairs a run broke, and whether they are the ones production broke with production's answers
    and account calls (verify.Reproduction.faithful)."""
    label_of = {guid: label for label, guid in result.history.where(f="scenario")[0].value["guids"].items()}
    return sorted({(v.rule, label_of.get(v.guid)) for v in result.verdicts}), reproduced(result, scenario).faithful


def replays(run_chaos, scenario, relay, runs: int):
    """`runs` replays on relay, the last under load: (pairs broken, reproduced?, seconds) each."""
    out = []
    for n in range(runs):
        with cpu_load() if n == runs - 1 else _nothing():
            t0 = time.monotonic()
            result = run_chaos(scenario, manifest=relay)
            out.append((*broken(result, scenario), time.monotonic() - t0))
    return out


@contextmanager
def _nothing():
    yield


@pytest.mark.parametrize("name, mutant", BUNDLES.items())
def test_the_night_and_its_shrunk_story_reproduce_on_the_buggy_relay_every_time_and_hold_on_every_correct_relay(
    run_chaos, tmp_path, name, mutant
):
    out = tmp_path / name
    relay = MUTANTS / mutant / "relay.toml"
    assert main(["incident", "import", str(EXAMPLES / name), "--out", str(out), "--relay", str(relay)]) == 0
    night, story = scenario_file.load(out / "night.yaml"), scenario_file.load(out / "story.yaml")
    told = (out / "story.yaml").read_text()
    assert "Shrunk by delta debugging" in told and "kept production's answers and account calls" in told
    for kind, loaded in (("night", night), ("story", story)):
        runs = replays(run_chaos, loaded.scenario, relay, RUNS[kind])
        assert all(ok for _, ok, _ in runs), runs
        assert len({tuple(pairs) for pairs, _, _ in runs}) == 1, f"the same verdicts on every replay: {runs}"
    assert all(seconds < STORY_WITHIN_S for _, _, seconds in runs), f"the story replays in seconds: {runs}"
    confirmed = {story.relay_path(r).resolve() for r in story.holds_on}  # the import replayed the story there
    assert Path(REFERENCE).resolve() in confirmed, story.holds_on
    for name, correct in {"reference": REFERENCE, **CORRECT}.items():
        if name in NIGHT_HOLDS_ON:
            run_chaos(night.scenario, manifest=correct).assert_holds()
        if Path(correct).resolve() not in confirmed:
            run_chaos(story.scenario, manifest=correct).assert_holds()


def verify(*args):
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "incident", "verify", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_incident_verify_exits_0_when_the_relay_reproduces_1_saying_what_is_missing_when_not_and_2_when_it_cannot_run(
    tmp_path,
):
    out = tmp_path / "oom"
    assert main(["incident", "import", str(EXAMPLES / "oom-early-resolve"), "--out", str(out), "--no-shrink"]) == 0
    story = out / "story.yaml"
    proc = verify(story, "--out", tmp_path / "v")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert (
        "reproduced on relay_under_test/mutants/resolve_ignores_min_age/relay.toml: one-account-call by "
        "tx-5e8a0b7c3d2f6914" in proc.stdout
    )
    proc = verify(story, "--relay", REFERENCE, "--out", tmp_path / "v")
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "NOT reproduced" in proc.stdout and "missing one-account-call by tx-5e8a0b7c3d2f6914" in proc.stdout
    assert sorted(p.name for p in (tmp_path / "v").iterdir() if p.name.startswith("run-")) == ["run-1", "run-2"], (
        "a reused --out folder gets a run folder per run"
    )
    plain = ROOT / "scenarios" / "regressions" / "memory-dedup-lost-on-restart.yaml"
    assert verify(plain, "--out", tmp_path / "v2").returncode == 2, "no incident block: nothing to verify"
    assert verify(story, "--relay", tmp_path / "no-such-relay.toml", "--out", tmp_path / "v3").returncode == 2


def test_an_import_whose_story_does_not_reproduce_on_the_relay_exits_1_and_says_what_is_missing(tmp_path, capsys):
    """Replayed on a correct relay, the oom night's story cannot break what production broke: the files are
    written, and the import says on screen that the story did not reproduce, which rule by which GUID is missing,
    and how to see more; its exit code says it too."""
    out = tmp_path / "oom"
    code = main(
        ["incident", "import", str(EXAMPLES / "oom-early-resolve"), "--out", str(out), "--relay", str(REFERENCE)]
    )
    said = capsys.readouterr().err
    assert code == 1, said
    assert "the story did not reproduce on relay_under_test/reference/relay.toml" in said, said
    assert "missing one-account-call by tx-5e8a0b7c3d2f6914" in said and "relaychaos incident verify" in said, said
    assert (out / "night.yaml").exists() and "Not shrunk: the story did not reproduce" in (
        out / "story.yaml"
    ).read_text()


def test_the_timeline_of_a_reproduction_opens_on_the_violation_production_had_with_the_ledgers_sent_to_failed(
    run_chaos, tmp_path
):
    out = tmp_path / "oom"
    assert main(["incident", "import", str(EXAMPLES / "oom-early-resolve"), "--out", str(out), "--no-shrink"]) == 0
    story = scenario_file.load(out / "story.yaml").scenario
    result = run_chaos(story, manifest=MUTANTS / "resolve_ignores_min_age" / "relay.toml")
    model = build(result.history, result.verdicts)
    [doubled] = story.incident["broke"]["one-debit"]
    chosen = model.verdicts[model.preselected]
    assert (chosen["rule"], chosen["label"]) in {("one-account-call", doubled), ("one-debit", doubled)}
    assert chosen["production"] == "tx-5e8a0b7c3d2f6914"
    ledger = [b.label for b in model.boxes if b.lane == "ledger"]
    assert f"{doubled} SENT→FAILED" in ledger, ledger
    assert any(w.guids for w in model.windows if "holds" in w.label), "a hold names its GUID, so it folds for others"
    assert "production GUID tx-5e8a0b7c3d2f6914" in next(b.text for b in model.boxes if b.lane == "channel")
