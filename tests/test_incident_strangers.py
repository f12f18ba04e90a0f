"""Two production-style bundles written by strangers who had not read the importer (from docs/incident-bundle.md
alone), each with its answer key sealed in ANSWER.md: a Grafana Loki export whose double debits show only with the
rows as old as they were when the purge CronJob ran (the relay purged undecided rows), and CloudWatch Logs Insights
CSV from two ECS tasks on one ledger (a lock of the relay's own process around its check-then-insert). Each imports
as it is, its story breaks the rules for the GUIDs the key names on the relay that ran, and holds on the
reference. (Three replays of each shrunk story on that relay, and one on every correct relay, were measured:
docs/incident-bundle.md.)"""

import re

import pytest

from relaychaos.commands.cli import main
from relaychaos.engine import scenario_file
from relaychaos.incidents.verify import reproduced

from .conftest import REFERENCE, ROOT

pytestmark = pytest.mark.stack
EXAMPLES = ROOT / "examples" / "incidents"
BUNDLES = {"stranger-loki-purge-aged": "purge_undecided", "stranger-cloudwatch-two-pods": "process_lock"}
KEYED_ROW = re.compile(r"^\| `([0-9a-f]{8}-[0-9a-f-]{27})`", re.M)  # a table row of the key naming a GUID


def answer_key(folder):
    """The production GUIDs the sealed key says were debited twice."""
    return set(KEYED_ROW.findall((folder / "ANSWER.md").read_text()))


@pytest.mark.parametrize("name, mutant", BUNDLES.items())
def test_a_strangers_bundle_imports_as_it_is_and_its_story_breaks_what_the_key_says_on_the_relay_that_ran(
    tmp_path, run_chaos, name, mutant
):
    out = tmp_path / name
    assert main(["incident", "import", str(EXAMPLES / name), "--out", str(out), "--no-shrink"]) == 0
    story = scenario_file.load(out / "story.yaml").scenario
    broke = {story.incident["guids"][label] for labels in story.incident["broke"].values() for label in labels}
    assert broke == answer_key(EXAMPLES / name), "the GUIDs the logs show debited twice are the key's"
    found = reproduced(run_chaos(story, manifest=ROOT / "relay_under_test" / "mutants" / mutant / "relay.toml"), story)
    assert found.ok, found
    run_chaos(story, manifest=REFERENCE).assert_holds()


def test_the_notes_count_a_json_document_s_records_and_name_the_table_of_several_that_skipped_them(capsys, tmp_path):
    bundle = EXAMPLES / "stranger-loki-purge-aged"
    assert main(["incident", "import", str(bundle), "--out", str(tmp_path / "out"), "--no-shrink"]) == 0
    said = capsys.readouterr().out
    for n in (1, 2):
        assert (
            f"operations-k8s-events.json: 24 record(s) skipped by [[logs.operations]] number {n} in incident.toml"
            in said
        )
