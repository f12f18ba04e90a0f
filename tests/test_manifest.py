"""A relay.toml is checked whole before anything starts, and every problem is named with its fix."""

from pathlib import Path

import pytest

from relaychaos.errors import ManifestError
from relaychaos.stack import manifest

from .conftest import BASE, REFERENCE


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "relay.toml"
    path.write_text(text)
    return path


def test_the_bundled_manifests_load_with_their_four_commands():
    for path in (BASE, REFERENCE):
        m = manifest.load(path)
        assert set(m.commands) == {"serve", "resolve", "reprocess", "purge"}
        assert m.folder == path.parent
    assert manifest.load(REFERENCE.parent).name == "reference"  # a folder holding relay.toml works too


def test_ready_timeout_defaults_to_ten_seconds(tmp_path):
    m = manifest.load(write(tmp_path, '[commands]\nserve=["a"]\nresolve=["b"]\nreprocess=["c"]\npurge=["d"]\n'))
    assert m.ready_timeout_s == 10 and m.name == tmp_path.name


def test_a_missing_file_says_where_it_looked_and_shows_an_example(tmp_path):
    with pytest.raises(ManifestError) as e:
        manifest.load(tmp_path / "nope.toml")
    assert "no relay manifest at" in str(e.value) and "[commands]" in str(e.value)


def test_invalid_toml_names_the_file_and_the_syntax_error(tmp_path):
    path = write(tmp_path, 'name = "x\n')
    with pytest.raises(ManifestError) as e:
        manifest.load(path)
    assert str(path) in str(e.value) and "not valid TOML" in str(e.value)


def test_every_problem_is_listed_at_once(tmp_path):
    path = write(
        tmp_path,
        'name = 3\n[commands]\nserve = "python relay.py"\n'
        'resolve = []\nreprocess = ["x", 1]\n[limits]\nready_timeout_s = -1\n',
    )
    with pytest.raises(ManifestError) as e:
        manifest.load(path)
    text = str(e.value)
    for needle in (
        "`name` must be a non-empty string",
        "[commands].serve must be",
        "[commands].resolve must be",
        "[commands].reprocess must be",
        "[commands] has no `purge`",
        "ready_timeout_s must be a number",
        "fix:",
    ):
        assert needle in text, needle


def test_keys_the_contract_does_not_define_are_reported_not_refused(tmp_path):
    m = manifest.load(
        write(
            tmp_path,
            'name = "x"\nversion = "1.2"\ndescription = "mine"\n[commands]\n'
            'serve=["a"]\nresolve=["b"]\nreprocess=["c"]\npurge=["d"]\nfly=["e"]\n',
        )
    )
    assert m.description == "mine"
    assert any("`version`" in w for w in m.warnings) and any("`fly`" in w for w in m.warnings)


def test_a_manifest_without_commands_says_which_table_is_missing(tmp_path):
    with pytest.raises(ManifestError, match=r"missing table \[commands\]"):
        manifest.load(write(tmp_path, 'name = "x"\n'))
