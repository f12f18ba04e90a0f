"""relaychaos works as an installed package, without its checkout, beside another project's own folders.

Builds the wheel, installs it into a fresh virtual environment outside the checkout,
and runs `relaychaos run` on the bundled reference (and the pytest plugin) from an
unrelated folder that holds its own `fixtures/` and `reports/` packages, which must
never be imported. Toxiproxy is found as documented (on PATH).
"""

import json
import os
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
    built = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", str(ROOT), "--no-deps", "-q", "-w", str(work / "dist")],
        capture_output=True,
        text=True,
    )
    assert built.returncode == 0, f"pip wheel {ROOT} exited {built.returncode}:\n{built.stdout}{built.stderr}"
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


def test_the_wheel_holds_the_timeline_pages_script(installed):
    _, wheel = installed
    assert "relaychaos/reports/timeline_page.js" in zipfile.ZipFile(wheel).namelist()


def test_relaychaos_run_on_the_reference_from_an_unrelated_folder(installed, elsewhere):
    venv, _ = installed
    done = subprocess.run(
        [venv / "bin" / "relaychaos", "run", "--out", str(elsewhere / "run")],
        cwd=elsewhere,
        env=env_for(venv),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    results = json.loads((elsewhere / "run" / "results.json").read_text())
    assert results["ok"] and results["summary"]["passed"] >= 30 and results["relay_name"] == "reference"
    assert (elsewhere / "run" / "report.html").exists() and (elsewhere / "run" / "junit.xml").exists()


def test_the_pytest_plugin_runs_scenarios_from_the_installed_package(installed, elsewhere):
    venv, _ = installed
    stdlib = next(
        Path(p)
        for p in subprocess.run(
            [venv / "bin" / "python", "-c", "from relaychaos import paths; print(paths.bundled_relays())"],
            capture_output=True,
            text=True,
            check=True,
            env=env_for(venv),
        ).stdout.split()
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
            str(stdlib / "stdlib" / "relay.toml"),
        ],
        cwd=elsewhere,
        env=env_for(venv),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0 and "2 passed" in done.stdout, done.stdout[-3000:] + done.stderr[-2000:]
