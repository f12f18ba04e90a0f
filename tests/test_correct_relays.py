"""No false alarms: every bundled correct relay, each written independently from the contract, passes the suite.

The reference runs the suite as `scenarios/` itself; here the Go relay, the plain
stdlib Python relay, the Java relay and the Rust relay (a stranger's, written from the contract and the
docs alone) run every named scenario and every regression file, and each must be exercised: every
landing claim LANDED (relaychaos.checkers.landing), never a pass whose fault met nothing. A verdict
here is a harness that goes beyond the contract (or a broken bundled relay): both
are bugs of the first order.
"""

import subprocess

import pytest

from relaychaos.engine import scenario_file
from relaychaos.scenarios import ALL, REGRESSION_FILES
from relaychaos.stack import manifest

from .conftest import ROOT

CORRECT = {
    "go": ROOT / "relay_under_test" / "go" / "relay.toml",
    "stdlib": ROOT / "relay_under_test" / "stdlib" / "relay.toml",
    "java": ROOT / "relay_under_test" / "java" / "relay.toml",
    "rust": ROOT / "relay_under_test" / "rust" / "relay.toml",  # a stranger's, from the contract and the docs alone
}
GO_BINARY = ROOT / "relay_under_test" / "go" / "bin" / "relay"
RUST_BINARY = ROOT / "relay_under_test" / "rust" / "bin" / "relay"
JAVA_BUILD = [
    ROOT / "relay_under_test" / "java" / "build" / "relay.jar",
    ROOT / "relay_under_test" / "java" / "build" / "native" / "libsqlitejdbc.so",
    ROOT / "relay_under_test" / "java" / "lib" / "sqlite-jdbc-3.54.1.0.jar",
]
STORIES = [(name, s) for name, s in ALL.items()] + [(p.stem, scenario_file.load(p).scenario) for p in REGRESSION_FILES]


@pytest.mark.parametrize("relay", CORRECT)
@pytest.mark.parametrize("name, scenario", STORIES, ids=[n for n, _ in STORIES])
def test_an_independent_correct_relay_passes(run_chaos, relay, name, scenario):
    if relay in ("go", "rust"):
        binary = GO_BINARY if relay == "go" else RUST_BINARY
        assert binary.exists(), f"{binary} is missing: run scripts/bootstrap.sh (it builds the {relay} relay)"
    if relay == "java":
        missing = [str(p) for p in JAVA_BUILD if not p.exists()]
        assert not missing, (
            f"{', '.join(missing)} missing: run scripts/bootstrap.sh (it builds the Java relay; needs a JDK 17+)"
        )
    run_chaos(scenario, manifest=CORRECT[relay]).assert_holds()


@pytest.mark.process
def test_the_java_relay_starts_from_its_trained_class_archive():
    """-Xshare:on refuses to start where the archive is missing or does not match the JDK and classpath."""
    folder = CORRECT["java"].parent
    serve = list(manifest.load(CORRECT["java"]).commands["serve"])
    argv = [a.replace("-Xshare:auto", "-Xshare:on") for a in serve[: serve.index("serve")]]
    done = subprocess.run(argv, cwd=folder, capture_output=True, text=True, timeout=60)
    assert "usage: relay serve" in done.stdout + done.stderr, (
        f"run scripts/bootstrap.sh (it trains build/relay.jsa); the JVM said: {done.stdout}{done.stderr}"
    )
