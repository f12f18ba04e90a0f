"""A relay that breaks the contract's interface gets a verdict naming the rule, not a harness stack trace."""

import dataclasses
import json
import resource
import shutil
import sys

import pytest

from relaychaos.contract import LEDGER_COLUMNS
from relaychaos.engine.steps import Reprocess, Resolve, Scenario, Send

from .conftest import ROOT, derived_relay

BROKEN = ROOT / "tests" / "relays" / "broken_relay.py"
SCENARIO = Scenario(
    "interface-probe", steps=(Send("g1"), Resolve(min_age_s=60), Reprocess(max_attempts=3)), batch_timeout_s=1.0
)


@pytest.fixture
def broken(tmp_path):
    def manifest(mode: str, serve: list[str] | None = None) -> str:
        folder = tmp_path / mode
        folder.mkdir()
        shutil.copy(BROKEN, folder)  # a submission holds its code: a sandboxed relay reaches only its folder
        cmd = lambda c: json.dumps([sys.executable, BROKEN.name, mode, c])  # noqa: E731
        (folder / "relay.toml").write_text(
            f'name = "broken-{mode}"\n[commands]\nserve = {json.dumps(serve) if serve else cmd("serve")}\n'
            f"resolve = {cmd('resolve')}\nreprocess = {cmd('reprocess')}\npurge = {cmd('purge')}\n"
            "[limits]\nready_timeout_s = 2\n"
        )
        return folder / "relay.toml"

    return manifest


def rules(result) -> set[str]:
    return {v.rule for v in result.verdicts}


def test_an_answer_that_is_not_json_breaks_the_interface_rule(run_chaos, broken):
    result = run_chaos(SCENARIO, manifest=broken("non-json"))
    assert "interface" in rules(result)
    assert "the answer is not a JSON object: 'OK, done'" in result.report(limit=20)


def test_a_wrong_http_status_breaks_the_interface_rule(run_chaos, broken):
    result = run_chaos(SCENARIO, manifest=broken("http-500"))
    assert "code 0000 came with HTTP 500" in result.report(limit=20)


def peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def test_an_answer_of_megabytes_is_never_read_whole_and_breaks_the_interface_rule(run_chaos, broken):
    before = peak_mib()
    result = run_chaos(SCENARIO, manifest=broken("huge-answer"))
    assert "interface" in rules(result)
    assert "(an answer body of over 64 KiB: the harness read none of it)" in result.report(limit=20)
    assert peak_mib() - before < 20, "the harness kept none of the 4 MiB answers"


def test_a_column_the_relay_added_to_its_ledger_is_never_read(run_chaos, broken):
    """Each row's own column is a virtual generated blob of 100 MB: the harness reads the contract's columns only."""
    before = peak_mib()
    result = run_chaos(SCENARIO, manifest=broken("padded-ledger"))
    assert "ledger-schema" not in rules(result), result.report(limit=20)
    rows = [e for e in result.history.where(f="ledger-snapshot") if e.type == "ok" and e.value["rows"]]
    assert rows and all(set(r) <= set(LEDGER_COLUMNS) for e in rows for r in e.value["rows"].values())
    assert peak_mib() - before < 20


def test_a_value_over_the_bound_in_the_ledger_is_named_and_never_read(run_chaos, broken):
    result = run_chaos(SCENARIO, manifest=broken("huge-response"))
    assert "ledger-schema" in rules(result)
    assert "in column `response`: the harness reads values up to 16 KiB" in result.report(limit=20)


def test_a_ledger_without_the_contract_table_is_named(run_chaos, broken):
    result = run_chaos(SCENARIO, manifest=broken("no-table"))
    assert "ledger-schema" in rules(result)
    assert "lacks table `ledger`" in result.report(limit=20)


def test_batch_commands_that_hang_or_crash_are_named(run_chaos, broken):
    hung = run_chaos(SCENARIO, manifest=broken("hang"))
    assert "was killed at its time limit" in hung.report(limit=20)
    # the crash needs time to happen: a loaded machine takes seconds to start Python and import aiohttp
    crashed = run_chaos(dataclasses.replace(SCENARIO, batch_timeout_s=30.0), manifest=broken("crash"))
    assert "exited with status 3" in crashed.report(limit=20)


def test_a_relay_without_health_gets_the_serve_ready_verdict(run_chaos, broken):
    no_health = [sys.executable, "-c", "import time; time.sleep(60)"]
    result = run_chaos(dataclasses.replace(SCENARIO, steps=(Send("g1"),)), manifest=broken("x", serve=no_health))
    assert rules(result) >= {"serve-ready"}
    assert "did not answer" in result.report(limit=20) and "GET /health" in result.report(limit=20)


@pytest.fixture
def lenient(tmp_path):
    """A manifest for the reference relay changed only to ignore fields beyond the four."""
    return derived_relay(tmp_path / "lenient", "lenient_relay", name="lenient")


@pytest.mark.parametrize("relay, answer", [("reference", "E400"), ("lenient", "0000")])
def test_a_body_with_an_extra_field_may_be_refused_or_processed(run_chaos, lenient, relay, answer):
    """Contract v1.1: fields beyond the four are the relay's to ignore or refuse; no verdict either way."""
    from relaychaos.scenarios import ALL

    manifest = lenient if relay == "lenient" else ROOT / "relay_under_test" / "reference" / "relay.toml"
    result = run_chaos(ALL["malformed-requests"], manifest=manifest)
    assert result.ok, result.report()
    extra = [
        e for e in result.history if e.f == "transfer" and e.type == "invoke" and '"extra"' in str(e.value.get("raw"))
    ]
    answers = [
        e.value.get("code")
        for e in result.history
        if e.f == "transfer" and e.type == "ok" and e.process == extra[0].process
    ]
    assert answers == [answer], "the relay took the path this test is about"


def test_an_e400_with_http_200_still_breaks_the_interface_rule(run_chaos, broken):
    result = run_chaos(dataclasses.replace(SCENARIO, steps=(Send("m1", raw="not json"),)), manifest=broken("e400-200"))
    assert "interface" in rules(result), result.report()
