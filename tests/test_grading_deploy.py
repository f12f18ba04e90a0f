"""The files that grade a class elsewhere parse, and say what docs/grading.md says they do."""

import os
import re
import subprocess

import pytest
import yaml

from .conftest import ROOT

WORKFLOW = ROOT / ".github" / "workflows" / "grade.yml"
K8S_JOB = ROOT / "deploy" / "k8s" / "grade-job.yaml"
GRADESCOPE = ROOT / "docs" / "gradescope"


def steps(job: dict) -> list[str]:
    return [s.get("run", "") for s in job["steps"]]


def test_the_workflow_grades_in_a_matrix_of_shards_and_merges_them():
    wf = yaml.safe_load(WORKFLOW.read_text())
    inputs = wf[True]["workflow_dispatch"]["inputs"]  # YAML 1.1 reads the key `on` as true
    assert set(inputs) == {"submissions", "shards"} and inputs["shards"]["default"] == 4
    jobs = wf["jobs"]
    assert jobs["grade"]["strategy"]["matrix"]["shard"] == "${{ fromJSON(needs.plan.outputs.shards) }}"
    grade = "\n".join(steps(jobs["grade"]))
    assert '.venv/bin/relaychaos grade "${subs[@]}" --shard "$SHARD/$SHARDS" --out "gradebook-$SHARD"' in grade
    upload = jobs["grade"]["steps"][-1]
    assert upload["uses"].startswith("actions/upload-artifact@")
    assert upload["with"]["path"] == "gradebook-${{ matrix.shard }}"
    assert jobs["merge"]["needs"] == "grade"
    assert "relaychaos gradebook merge gradebook-* --out gradebook" in steps(jobs["merge"])
    assert jobs["merge"]["steps"][-1]["with"]["path"] == "gradebook"


def test_the_workflow_never_pastes_an_input_into_a_script():
    wf = yaml.safe_load(WORKFLOW.read_text())
    scripts = [run for job in wf["jobs"].values() for run in steps(job)]
    assert not [s for s in scripts if "${{" in s], "inputs reach scripts through env, never as text"
    checkouts = [
        s for job in wf["jobs"].values() for s in job["steps"] if s.get("uses", "").startswith("actions/checkout")
    ]
    assert all(s["with"]["persist-credentials"] is False for s in checkouts), "student code must find no token"
    assert wf["permissions"] == {"contents": "read"}


def test_toxiproxy_is_built_once_and_every_shard_downloads_it_before_its_bootstrap():
    jobs = yaml.safe_load(WORKFLOW.read_text())["jobs"]
    assert "relaychaos setup toxiproxy --dest toxiproxy-bin" in "\n".join(steps(jobs["toxiproxy"]))
    [shared] = [s for s in jobs["toxiproxy"]["steps"] if s.get("uses", "").startswith("actions/upload-artifact@")]
    assert shared["with"]["path"] == "toxiproxy-bin/toxiproxy-server" and "toxiproxy" in jobs["grade"]["needs"]
    uses = [s.get("uses", "") for s in jobs["grade"]["steps"]]
    got = uses.index(next(u for u in uses if u.startswith("actions/download-artifact@")))
    download, bootstrap = jobs["grade"]["steps"][got], jobs["grade"]["steps"][got + 1]["run"]
    assert download["with"] == {"name": shared["with"]["name"], "path": "tools/bin"}  # bootstrap builds none there
    assert bootstrap.index("chmod +x tools/bin/toxiproxy-server") < bootstrap.index("bash scripts/bootstrap.sh")


@pytest.mark.process
def test_the_plan_step_numbers_the_shards_from_0():
    plan = yaml.safe_load(WORKFLOW.read_text())["jobs"]["plan"]["steps"][0]["run"]
    out = subprocess.run(
        ["bash", "-c", plan.replace('>> "$GITHUB_OUTPUT"', "")],
        capture_output=True,
        text=True,
        env={**os.environ, "SHARDS": "4"},
        timeout=30,
    )
    assert out.stdout.strip() == "shards=[0, 1, 2, 3]", out.stderr
    bad = subprocess.run(
        ["bash", "-c", plan.replace('>> "$GITHUB_OUTPUT"', "")],
        capture_output=True,
        text=True,
        env={**os.environ, "SHARDS": "0"},
        timeout=30,
    )
    assert bad.returncode != 0 and "shards must be between 1 and 256" in bad.stderr


def test_the_kubernetes_job_is_indexed_with_one_shard_per_index_on_shared_volumes():
    job = yaml.safe_load(K8S_JOB.read_text())
    spec = job["spec"]
    assert job["kind"] == "Job" and spec["completionMode"] == "Indexed"
    n = spec["completions"]
    assert spec["parallelism"] == n
    pod = spec["template"]["spec"]
    command = " ".join(pod["containers"][0]["command"] + pod["containers"][0]["args"])
    assert re.search(
        rf'relaychaos grade /class/\* --shard "\$JOB_COMPLETION_INDEX/{n}" '
        r'--out "/results/shard-\$JOB_COMPLETION_INDEX"',
        command,
    ), command
    mounts = {m["mountPath"]: m for m in pod["containers"][0]["volumeMounts"]}
    assert mounts["/class"]["readOnly"] is True and "/results" in mounts
    assert pod["automountServiceAccountToken"] is False and pod["restartPolicy"] == "Never"
    assert "relaychaos gradebook merge /results/shard-* --out /results/gradebook" in K8S_JOB.read_text()


@pytest.mark.parametrize("name", ["setup.sh", "run_autograder"])
@pytest.mark.process
def test_the_gradescope_scripts_are_executable_bash(name):
    path = GRADESCOPE / name
    assert os.access(path, os.X_OK) and path.read_text().startswith("#!/usr/bin/env bash\n")
    assert subprocess.run(["bash", "-n", str(path)], capture_output=True, timeout=30).returncode == 0


def test_run_autograder_grades_the_submission_for_gradescope():
    assert "exec .venv/bin/relaychaos grade --gradescope" in (GRADESCOPE / "run_autograder").read_text()
    assert "PYTHON=python3.11 bash scripts/bootstrap.sh" in (GRADESCOPE / "setup.sh").read_text()


def test_the_grading_guide_points_at_files_that_exist():
    guide = (ROOT / "docs" / "grading.md").read_text()
    for link in re.findall(r"\]\((?!https?:)([^)#]+)", guide):
        assert (ROOT / "docs" / link).resolve().exists(), link
