"""Every broken relay in the catalogue is runnable: it starts and serves under the supervisor."""

from pathlib import Path

import pytest

from relaychaos.relay_under_test.mutants.catalogue import MUTANTS, description
from relaychaos.stack import manifest
from relaychaos.stack.channel import new_guid, transfer

from .conftest import ROOT

MUTANT_DIR = ROOT / "relay_under_test" / "mutants"
FOLDERS = sorted(p.parent for p in MUTANT_DIR.glob("*/relay.toml"))


def test_every_catalogued_mutant_has_a_folder_and_every_folder_a_catalogued_mutant():
    assert {p.name for p in FOLDERS} == set(MUTANTS)


@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_the_manifest_names_the_one_bug(folder: Path):
    m = manifest.load(folder)
    assert m.name == folder.name and m.description == description(folder.name) and not m.warnings


@pytest.mark.stack
@pytest.mark.parametrize("folder", FOLDERS, ids=[p.name for p in FOLDERS])
def test_the_mutant_starts_and_serves_a_transfer(make_stack, folder: Path):
    stack = make_stack(folder, accounts={"alice": 100, "bob": 0})
    stack.start_relay()
    [outcome] = stack.send(transfer(new_guid(), "alice", "bob", 10))
    assert outcome.code == "0000"
    for command, result in (
        ("resolve", stack.supervisor.resolve(60)),
        ("reprocess", stack.supervisor.reprocess(3)),
        ("purge", stack.supervisor.purge(3600)),
    ):
        assert result.ok, f"{command}: {result.tail()}"
