"""A relay.toml is checked whole before anything starts, and every problem is named with its fix."""

import json
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from relaychaos.errors import ManifestError
from relaychaos.sandbox.environment import commands_path
from relaychaos.sandbox.policy import Sandbox
from relaychaos.stack import manifest
from relaychaos.stack.supervisor import Supervisor

from .conftest import BASE, REFERENCE, ROOT

FOUR = 'resolve = ["true"]\nreprocess = ["true"]\npurge = ["true"]\n'  # a course relay's batch commands
KEYED = """
name = "payments"
[commands]
serve = ["./payments", "serve"]
[api]
profile = "idempotency-key"
path = "/payments"
[api.body]
amount = 100
debtor = "alice"
creditor = "bob"
[api.fields]
amount = "/amount"
payer = "/debtor"
payee = "/creditor"
[api.env]
port = "PORT"
ledger_url = "DATABASE_URL"
[ledger]
kind = "postgresql"
table = "payments"
key = "idempotency_key"
status = "status"
statuses = { started = "SENT", succeeded = "DONE" }
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "relay.toml"
    path.write_text(text)
    return path


def test_the_bundled_manifests_load_with_their_four_commands_run_in_their_shared_root():
    for path in (BASE, REFERENCE):
        m = manifest.load(path)
        assert set(m.commands) == {"serve", "resolve", "reprocess", "purge"}
        assert m.folder == m.code == path.parent.parent  # root = "..": relay_under_test/, where run.py is
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


def relaychaos_run(*args: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "relaychaos.commands.cli", "run", *map(str, args)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )


# -- root: the folder the commands run in --------------------------------------------------


def test_commands_run_in_root_named_relative_to_the_manifests_folder(tmp_path):
    (tmp_path / "deploy").mkdir()
    m = manifest.load(write(tmp_path / "deploy", 'root = ".."\n[commands]\nserve = ["./serve.sh"]\n' + FOUR))
    assert m.folder == m.code == tmp_path.resolve()
    assert manifest.load(write(tmp_path, '[commands]\nserve = ["a"]\n' + FOUR)).folder == tmp_path.resolve()


def test_a_root_that_is_not_a_folder_is_named_with_its_path_and_the_fix(tmp_path):
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, 'root = "../nowhere"\n[commands]\nserve = ["a"]\n' + FOUR))
    text = str(e.value)
    assert f"`root` = '../nowhere' names {tmp_path.parent / 'nowhere'}, which is not a folder" in text
    assert "fix:" in text and "root =" in text


def test_an_absolute_root_is_refused(tmp_path):
    with pytest.raises(ManifestError, match="`root` must be a folder relative to the manifest's"):
        manifest.load(write(tmp_path, f'root = "{tmp_path}"\n[commands]\nserve = ["a"]\n' + FOUR))


def test_a_command_whose_program_is_missing_is_named_with_the_folder_it_runs_in(tmp_path):
    (tmp_path / "deploy").mkdir()
    m = manifest.load(
        write(
            tmp_path / "deploy",
            'root = ".."\n[commands]\nserve = ["./bin/payments", "serve"]\nresolve = ["nope-x1"]\n'
            'reprocess = ["true"]\npurge = ["true"]\n',
        )
    )
    with pytest.raises(ManifestError) as e:
        manifest.runnable(m, commands_path(on=True))
    text = str(e.value)
    assert f"[commands].serve runs `./bin/payments`, which is not an executable file in {tmp_path} (`root`)" in text
    assert "[commands].resolve runs `nope-x1`, which is not an executable file on the relay's PATH" in text
    assert "fix: build the program, or correct its path in [commands]" in text


def test_a_program_in_a_folder_the_sandbox_does_not_copy_is_named_with_the_fix_unless_the_sandbox_is_off(tmp_path):
    python = tmp_path / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n")
    python.chmod(0o755)
    m = manifest.load(write(tmp_path, '[commands]\nserve = [".venv/bin/python", "-m", "svc"]\n' + FOUR))
    with pytest.raises(ManifestError) as e:
        manifest.runnable(m, commands_path(on=True))
    assert "runs `.venv/bin/python`, inside `.venv`, which the sandbox's copy of the relay's folder leaves out" in str(
        e.value
    )
    assert "rename that folder (e.g. `venv`)" in str(e.value)
    manifest.runnable(m, commands_path(on=False), sandboxed=False)  # run as it is, in its own folder: it is there


@pytest.mark.process
def test_relaychaos_run_refuses_a_bad_root_before_anything_starts_with_exit_status_2(tmp_path):
    path = write(tmp_path, 'root = "code"\n[commands]\nserve = ["./serve"]\n' + FOUR)
    proc = relaychaos_run("--relay", path, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"`root` = 'code' names {tmp_path / 'code'}, which is not a folder" in proc.stderr
    assert "running the suite" not in proc.stdout and "Traceback" not in proc.stderr


@pytest.mark.process
def test_relaychaos_run_refuses_a_missing_program_before_anything_starts_with_exit_status_2(tmp_path):
    (tmp_path / "code").mkdir()
    path = write(tmp_path, 'root = "code"\n[commands]\nserve = ["./serve"]\n' + FOUR)
    proc = relaychaos_run("--relay", path, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert f"runs `./serve`, which is not an executable file in {tmp_path / 'code'} (`root`)" in proc.stderr
    assert "running the suite" not in proc.stdout


@pytest.mark.process
def test_relaychaos_run_refuses_a_bad_status_mapping_with_exit_status_2_and_a_keyed_fix(tmp_path):
    (tmp_path / "payments").write_text("#!/bin/sh\n")
    (tmp_path / "payments").chmod(0o755)
    path = write(tmp_path, KEYED.replace('succeeded = "DONE"', 'succeeded = "OK"'))
    proc = relaychaos_run("--relay", path, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "[ledger.statuses] must map" in proc.stderr and "'succeeded': 'OK'" in proc.stderr


@pytest.mark.process
def test_relaychaos_run_refuses_a_ledger_url_it_cannot_reach_before_anything_starts_with_exit_status_2(tmp_path):
    (tmp_path / "payments").write_text("#!/bin/sh\n")
    (tmp_path / "payments").chmod(0o755)
    path = write(
        tmp_path, KEYED.replace('kind = "postgresql"', 'kind = "postgresql"\nurl = "postgresql://u@127.0.0.1:1/x"')
    )
    proc = relaychaos_run("--relay", path, "--out", tmp_path / "out")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "[ledger] url cannot be reached" in proc.stderr and "running the suite" not in proc.stdout


# -- the fix is shown in the manifest's own profile ----------------------------------------


def test_a_keyed_manifests_status_error_shows_a_keyed_ledger_not_a_course_manifest(tmp_path):
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, KEYED.replace('succeeded = "DONE"', 'succeeded = "OK"')))
    fix = e.value.fix or ""
    assert "in a manifest of the idempotency-key profile" in fix
    assert 'statuses = { started = "SENT", succeeded = "DONE"' in fix
    assert "each value the service writes in `status` (left) = the contract's status it means (right)" in fix
    assert "my_relay" not in fix and "[commands]" not in fix, "no course manifest for a keyed service's ledger"


def test_a_course_manifests_error_still_shows_a_course_manifest(tmp_path):
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, 'name = "x"\n'))
    assert "in a manifest of the course profile" in (e.value.fix or "") and "my_relay" in (e.value.fix or "")


# -- [env]: the service's own variables -----------------------------------------------------


def test_env_holds_the_services_own_variables(tmp_path):
    m = manifest.load(write(tmp_path, KEYED + '[env]\nLEASE_MS = "3000"\nLOG_LEVEL = "debug"\n'))
    assert m.env == {"LEASE_MS": "3000", "LOG_LEVEL": "debug"}
    assert manifest.load(write(tmp_path, KEYED)).env == {}


def test_env_refuses_what_the_harness_or_the_sandbox_sets_and_values_that_are_not_strings(tmp_path):
    text = KEYED + '[env]\nPORT = "8080"\nRELAY_PORT = "1"\nPATH = "/opt/bin"\nLEASE_MS = 3000\n"2BAD" = "x"\n'
    with pytest.raises(ManifestError) as e:
        manifest.load(write(tmp_path, text))
    said = str(e.value)
    assert '[env].PORT is a variable the harness sets ([api.env] port = "PORT")' in said
    assert "[env].RELAY_PORT is a variable the harness sets (the contract's)" in said
    assert "[env].PATH is a variable the harness sets (the sandbox's)" in said
    assert '[env].LEASE_MS must be a string, got 3000 (write LEASE_MS = "3000")' in said
    assert "[env] '2BAD' is not an environment variable name" in said
    assert "[env]" in (e.value.fix or "") and 'LEASE_MS = "3000"' in (e.value.fix or "")


def test_env_is_shown_with_its_values_in_results_json_and_the_report(tmp_path):
    from relaychaos.plugin.results_recorder import ResultsRecorder
    from relaychaos.reports.html import write as write_html
    from relaychaos.reports.results import RunResults

    path = write(tmp_path, KEYED + '[env]\nLEASE_MS = "3000"\n')
    ResultsRecorder(path, tmp_path, {}).results.write(tmp_path / "results.json")
    assert json.loads((tmp_path / "results.json").read_text())["relay_env"] == {"LEASE_MS": "3000"}
    assert RunResults.load(tmp_path / "results.json").relay_env == {"LEASE_MS": "3000"}, "kept by recheck"
    write_html(tmp_path / "results.json")
    assert "<code>LEASE_MS=3000</code>" in (tmp_path / "report.html").read_text()


@pytest.mark.stack
def test_env_and_root_reach_the_service_inside_the_sandbox(tmp_path):
    """A relay whose manifest sits below its code: serve runs in `root`, with [env], in the sandbox (auto)."""
    code = tmp_path / "service"
    (code / "deploy").mkdir(parents=True)
    (code / "serve.py").write_text(
        "import json, os; from aiohttp import web\n"
        "seen = {'greeting': os.environ.get('GREETING'), 'here': sorted(os.listdir('.'))}\n"
        "app = web.Application(); app.router.add_get('/health', lambda r: web.json_response(seen))\n"
        "web.run_app(app, host=os.environ['RELAY_HOST'], port=int(os.environ['RELAY_PORT']), print=None)\n"
    )
    path = write(
        code / "deploy",
        'root = ".."\n[commands]\nserve = ["python", "serve.py"]\nresolve = ["true"]\n'
        'reprocess = ["true"]\npurge = ["true"]\n[env]\nGREETING = "hello from relay.toml"\n',
    )
    sandbox = Sandbox.create("auto")
    sup = Supervisor(
        manifest.load(path), workdir=tmp_path / "run", account_url="http://127.0.0.1:9", account_timeout_ms=300,
        sandbox=sandbox,
    )  # fmt: skip
    try:
        relay = sup.start()
        with urllib.request.urlopen(relay.url + "/health", timeout=5) as answer:
            seen = json.loads(answer.read())
        assert seen["greeting"] == "hello from relay.toml"
        assert seen["here"] == ["deploy", "serve.py"], "serve runs in root, the folder above the manifest's"
    finally:
        sup.close()
        sandbox.close()
