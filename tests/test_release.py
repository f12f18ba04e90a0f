"""A release a team can pin: the version in pyproject.toml has its CHANGELOG.md section, and the release workflow
publishes only such a tag, from packages built and checked as .ci/run checks them (scripts/package_check.sh)."""

import re
import tomllib

import yaml

from .conftest import ROOT


def version() -> str:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]


def test_the_version_is_semantic_and_the_changelog_has_its_section():
    assert re.fullmatch(r"\d+\.\d+\.\d+", version())
    assert re.search(rf"^## {re.escape(version())} ", (ROOT / "CHANGELOG.md").read_text(), re.M)


def test_the_release_workflow_checks_the_tag_builds_as_ci_does_and_publishes_with_trusted_publishing():
    flow = yaml.safe_load((ROOT / ".github" / "workflows" / "release.yml").read_text())
    assert flow[True]["push"]["tags"] == ["v*.*.*"]  # YAML reads the key `on` as True
    build = "\n".join(step.get("run", "") for step in flow["jobs"]["build"]["steps"])
    assert "scripts/package_check.sh" in build and "CHANGELOG.md" in build and "v$version" in build
    publish = flow["jobs"]["publish"]
    assert publish["permissions"] == {"id-token": "write"} and publish["environment"] == "pypi"
    assert any(s.get("uses", "").startswith("pypa/gh-action-pypi-publish@") for s in publish["steps"])
