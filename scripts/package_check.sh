#!/usr/bin/env bash
# The release's packages, built and checked as a release builds them (.github/workflows/release.yml), and every
# workflow linted:
#   - the sdist and the wheel are built from a `git archive` of HEAD in a temporary folder, so that nothing is written
#     beside the sources (no build/, no egg-info), into OUT (default runs/dist);
#   - `twine check` passes on both, and the wheel holds the one top-level package, relaychaos, and of the bundled
#     relays the reference alone;
#   - actionlint (github.com/rhysd/actionlint, built with Go into tools/bin the first time) passes on
#     .github/workflows/*.yml and on the workflows docs/ci.md shows; --no-lint leaves that out (the release job, which
#     has no Go).
# Exit non-zero, with what failed, otherwise.
set -euo pipefail
cd "$(dirname "$0")/.."
out="$(realpath -m "${1:-runs/dist}")"
lint=1
[ "${2:-}" = "--no-lint" ] && lint=0
py=.venv/bin/python
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
git archive HEAD | tar -x -C "$work"
rm -rf "$out" && mkdir -p "$out"
if ! "$py" -m build --sdist --wheel --outdir "$out" "$work" >"$work/build.log" 2>&1; then
  cat "$work/build.log" >&2
  echo "package_check: the packages could not be built (the log is above)" >&2
  exit 1
fi
"$py" -m twine check --strict "$out"/*
"$py" - "$out" <<'PY'
import sys, zipfile, pathlib
[wheel] = pathlib.Path(sys.argv[1]).glob("relaychaos-*.whl")
tops = {n.split("/")[0] for n in zipfile.ZipFile(wheel).namelist() if not n.split("/")[0].endswith(".dist-info")}
if tops != {"relaychaos"}:
    sys.exit(f"package_check: {wheel.name} holds {sorted(tops)}, not the one package relaychaos")
relays = {n.split("/")[2] for n in zipfile.ZipFile(wheel).namelist() if n.startswith("relaychaos/relay_under_test/")}
if relays != {"__init__.py", "run.py", "reference"}:
    sys.exit(f"package_check: {wheel.name} ships the bundled relays {sorted(relays)}: the reference alone (setup.py)")
print(f"package_check: {wheel.name} and its sdist built out of the tree and twine-clean")
PY
if [ "$lint" = 1 ]; then
  if [ ! -x tools/bin/actionlint ]; then
    echo "package_check: building actionlint v1.7.12 with Go (seconds, once) ..."
    GOBIN="$PWD/tools/bin" GOFLAGS=-mod=mod go install github.com/rhysd/actionlint/cmd/actionlint@v1.7.12
  fi
  # docs/ci.md's workflows too, each ```yaml block a file (scripts/doc_workflows.py); actionlint does not read
  # action.yml (an action's metadata): tests/test_action.py checks it
  docs="$("$py" scripts/doc_workflows.py docs/ci.md "$work/docs-workflows")"
  # shellcheck disable=SC2086 # one path a line, none with a space
  tools/bin/actionlint .github/workflows/*.yml $docs
  echo "package_check: actionlint passes on $(ls .github/workflows/*.yml | tr '\n' ' ')and docs/ci.md's $(echo "$docs" | wc -l) workflows"
fi
