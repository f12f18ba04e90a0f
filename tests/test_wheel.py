"""relaychaos works as an installed package, without its checkout, beside another project's own folders.

Builds the wheel, installs it into a fresh virtual environment outside the checkout,
and runs `relaychaos run` on the bundled reference (and the pytest plugin) from an
unrelated folder that holds its own `fixtures/` and `reports/` packages, which must
never be imported. Toxiproxy is found as documented (on PATH).
"""

import json
import os
import re
import runpy
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from .conftest import ROOT

# the wheel is built and installed once, on one worker (make test: --dist loadgroup)
pytestmark = [pytest.mark.stack, pytest.mark.xdist_group("wheel")]

TRAP = 'raise SystemExit("relaychaos imported this project\'s own {name}/ package")\n'


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """(venv folder, wheel path): the wheel built from this checkout, installed into a fresh venv."""
    work = tmp_path_factory.mktemp("wheel")
    source = copy_of_the_checkout(work / "source")
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(source), "--no-deps", "-q", "-w", str(work / "dist")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"pip wheel {source} exited {built.returncode}:\n{built.stdout}{built.stderr}"
    [wheel] = (work / "dist").glob("relaychaos-*.whl")
    venv = work / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run(
        [venv / "bin" / "pip", "install", "-q", "--disable-pip-version-check", str(wheel)],
        check=True,
        capture_output=True,
        text=True,
    )
    return venv, wheel


def copy_of_the_checkout(to: Path) -> Path:
    """The checkout's files as they are now (committed or not, never those git ignores, links as links): a build
    there writes nothing into the checkout, and finds no build/ left there by an earlier one."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        src, dst = ROOT / name, to / name
        if not src.exists() and not src.is_symlink():
            continue  # deleted in the work tree, not yet committed
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(src, dst, follow_symlinks=False)
    return to


@pytest.fixture
def elsewhere(tmp_path):
    """An unrelated project folder with its own fixtures/ and reports/ packages that must not be imported."""
    for name in ("fixtures", "reports"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "__init__.py").write_text(TRAP.format(name=name))
    return tmp_path


def env_for(venv: Path) -> dict:
    tools = ROOT / "tools" / "bin"
    return {
        **os.environ,
        "PATH": f"{venv / 'bin'}{os.pathsep}{tools}{os.pathsep}{os.environ['PATH']}",
        "PYTHONPATH": "",
    }


def test_the_wheel_claims_one_top_level_import_name(installed):
    _, wheel = installed
    tops = {name.split("/")[0] for name in zipfile.ZipFile(wheel).namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"relaychaos"}


def test_the_wheel_ships_the_reference_relay_and_no_other_bundled_relay(installed):
    _, wheel = installed
    relays = {
        n.split("/")[2] for n in zipfile.ZipFile(wheel).namelist() if n.startswith("relaychaos/relay_under_test/")
    }
    assert relays == {"__init__.py", "run.py", "reference"}, "the other relays are a checkout's examples"


def test_a_wheel_built_with_every_relay_asked_for_lists_the_mutants_too():
    setup_py = runpy.run_path(str(ROOT / "setup.py"), run_name="setup_py")  # its packages(), without setup()
    slim, every = setup_py["packages"](), setup_py["packages"](every_relay=True)
    assert "relaychaos.relay_under_test.reference" in slim and "relaychaos.relay_under_test.reference" in every
    assert "relaychaos.relay_under_test.mutants" not in slim and "relaychaos.relay_under_test.mutants" in every
    assert "relaychaos.scenarios.regressions" in slim, "data folders of the harness ship"


def test_the_wheel_holds_the_timeline_pages_script(installed):
    _, wheel = installed
    assert "relaychaos/reports/timeline_page.js" in zipfile.ZipFile(wheel).namelist()


def test_relaychaos_run_on_the_reference_from_an_unrelated_folder(installed, elsewhere):
    """Two scenarios run (the whole suite runs on the reference in scenarios/test_suite.py); every one is collected."""
    venv, _ = installed
    done = subprocess.run(
        [
            venv / "bin" / "relaychaos",
            "run",
            "-n",
            "0",
            "--out",
            str(elsewhere / "run"),
            "--",
            "-k",
            "happy-path or kill",
        ],
        cwd=elsewhere,
        env=env_for(venv),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((elsewhere / "run" / "results.json").read_text())
    assert results["ok"] and results["summary"]["passed"] >= 2 and results["relay_name"] == "reference"
    assert (elsewhere / "run" / "report.html").exists() and (elsewhere / "run" / "junit.xml").exists()
    listed = subprocess.run(
        [venv / "bin" / "python", "-m", "pytest", "--pyargs", "relaychaos.scenarios", "--collect-only", "-q"],
        cwd=elsewhere,
        env=env_for(venv),
        capture_output=True,
        text=True,
        timeout=300,
    )
    collected = re.search(r"(\d+) tests collected", listed.stdout)
    assert listed.returncode == 0 and collected and int(collected.group(1)) >= 30, listed.stdout[-3000:]


def test_the_pytest_plugin_runs_scenarios_from_the_installed_package(installed, elsewhere):
    """Against a relay of the team's own, outside the repository (a copy of the stdlib relay, which imports nothing
    of relaychaos; the wheel ships the reference alone)."""
    venv, _ = installed
    own = shutil.copytree(
        ROOT / "relay_under_test" / "stdlib", elsewhere / "our_relay", ignore=shutil.ignore_patterns("__pycache__")
    )
    done = subprocess.run(
        [
            venv / "bin" / "python",
            "-m",
            "pytest",
            "--pyargs",
            "relaychaos.scenarios",
            "-q",
            "-p",
            "no:cacheprovider",
            "-k",
            "happy-path or malformed-requests",
            "--relay",
            str(own / "relay.toml"),
        ],
        cwd=elsewhere,
        env=env_for(venv),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
