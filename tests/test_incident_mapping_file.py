"""`incident import --mapping FILE`: a bundle that ships an incident.toml of its own (another tool's, or a wrong one)
is read through the mapping named instead, untouched; errors name that file."""

import shutil

from relaychaos.commands.cli import main

from .conftest import ROOT

BUNDLE = ROOT / "examples" / "incidents" / "reprocess-resent-timeouts"


def test_a_mapping_file_given_reads_the_bundle_as_its_own_incident_toml_would(tmp_path, capsys):
    own = tmp_path / "own"
    assert main(["incident", "import", str(BUNDLE), "--out", str(own), "--no-shrink"]) == 0
    bundle = shutil.copytree(BUNDLE, tmp_path / "bundle")
    mine = tmp_path / "mine.toml"
    shutil.move(bundle / "incident.toml", mine)
    (bundle / "incident.toml").write_text("[logs.channel]\nformat = 'not a format'\n")  # the bundle's, unusable
    out = tmp_path / "out"
    assert main(["incident", "import", str(bundle), "--out", str(out), "--no-shrink"]) == 2, "its own cannot be read"
    assert main(["incident", "import", str(bundle), "--out", str(out), "--no-shrink", "--mapping", str(mine)]) == 0
    assert len(_steps(out / "night.yaml")) > 20
    assert _steps(out / "night.yaml") == _steps(own / "night.yaml")
    assert (bundle / "incident.toml").read_text().startswith("[logs.channel]"), "the bundle is left as it is"
    capsys.readouterr()


def _steps(path):
    """A night's lines without its comments (which name the bundle's folder)."""
    return [line for line in path.read_text().splitlines() if not line.lstrip().startswith("#")]


def test_a_mapping_file_that_is_not_there_or_is_wrong_is_named_in_the_error(tmp_path, capsys):
    out = tmp_path / "out"
    missing = tmp_path / "nowhere.toml"
    assert main(["incident", "import", str(BUNDLE), "--out", str(out), "--no-shrink", "--mapping", str(missing)]) == 2
    assert f"{missing}: no such file" in capsys.readouterr().err
    wrong = tmp_path / "wrong.toml"
    wrong.write_text("[logs.channel]\nformat = 'yaml'\n")
    assert main(["incident", "import", str(BUNDLE), "--out", str(out), "--no-shrink", "--mapping", str(wrong)]) == 2
    err = capsys.readouterr().err
    assert f"{wrong}, [logs.channel]" in err and "format = 'yaml' is not read" in err, err
