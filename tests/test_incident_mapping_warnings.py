"""A mapping that reads nothing is said, never a silent default: a mapped field no record has, a field's regex that
matches no value, a [pods] entry no instance matches: each a warning on standard error, counted; a mapping that reads
all it names warns of nothing."""

import pytest

from .conftest import ROOT
from .test_incident_bad_input import run_import, small_bundle, spoil

EXAMPLES = ROOT / "examples" / "incidents"


@pytest.mark.parametrize(
    "old, new, warned",
    [
        (
            'relay = "upstream"}',
            'relay = "pod"}',
            [
                "[logs.channel] in incident.toml: fields.relay = 'pod' is in none of its 3 records, so they were read "
                "without it (relay instance a): name the key its lines have",
                "[pods] 'relay-6c9d-*' matches no relay instance the logs name (they name: a)",
            ],
        ),
        (
            'relay = "upstream"}',
            'relay = {path = "upstream", regex = "pod-(\\\\w+)"}}',
            [
                "[logs.channel] in incident.toml: fields.relay: the regex 'pod-(\\\\w+)' matched nothing in "
                "upstream on 3 of 3 records (first: ",
                "gateway-0.log, line 2: 'relay-6c9d-aa'), so they were read without it: make its first group match",
            ],
        ),
    ],
    ids=["a-key-no-line-has", "a-regex-that-matches-no-value"],
)
def test_a_mapping_that_reads_nothing_is_a_counted_warning_on_screen_never_a_silent_default(
    tmp_path, capsys, old, new, warned
):
    bundle = small_bundle(tmp_path / "b")
    spoil(bundle, "incident.toml", old, new)
    code, _, err, _ = run_import(bundle, tmp_path, capsys)
    assert code == 0, err
    for words in warned:
        assert words in err, err
    assert f"relaychaos: {len([w for w in err.splitlines() if 'warning: ' in w])} warning(s): incident.toml maps" in err


@pytest.mark.parametrize("bundle", ["small", "oom-early-resolve"])
def test_a_mapping_that_reads_every_field_it_names_warns_of_nothing(tmp_path, capsys, bundle):
    """oom-early-resolve's operations map `command` by a regex on the name of the Kubernetes object: a kill's has no
    command, and only its batch runs are short of one if the regex misses."""
    folder = small_bundle(tmp_path / "b") if bundle == "small" else EXAMPLES / bundle
    code, _, err, _ = run_import(folder, tmp_path, capsys)
    assert code == 0 and "warning" not in err, err
