#!/usr/bin/env bash
# The steps of the relaychaos GitHub Action (action.yml at the repository's root), one phase per call. The action
# gives its inputs as environment variables; outside GitHub (the tests) point GITHUB_OUTPUT and GITHUB_STEP_SUMMARY
# at files and RUNNER_TEMP at a folder, and give the same variables.
#
#   steps.sh install    a venv, $RUNNER_TEMP/relaychaos-venv, with relaychaos from RELAYCHAOS_SOURCE (a pip
#                       requirement: relaychaos==X.Y.Z, a git URL, a wheel, a folder; empty: the action's own
#                       checkout, GITHUB_ACTION_PATH), made with PYTHON (default python3, 3.11+); kept for a second
#                       use of the action in the same job. Outputs: venv, toxiproxy-dir, toxiproxy-version.
#   steps.sh toxiproxy  toxiproxy-server into $RUNNER_TEMP/relaychaos-toxiproxy (the action caches that folder):
#                       `relaychaos setup toxiproxy` builds it with Go where Go is on PATH, else takes the release
#                       binary of the version relaychaos is tested with, downloaded from GitHub.
#   steps.sh run        `relaychaos run` with RELAY (a relay.toml; empty: the bundled reference), BUDGET (quick, ci,
#                       nightly, grade), SANDBOX (auto, strict, off), WORKERS (-n), HUNT (true, false), OUT (the run
#                       folder; a failing random story's scenario file goes into its found/) and ARTIFACT (the name
#                       the run folder is uploaded under, for the summary). Outputs:
#                       run-folder, results, junit, exit-code; a job summary (scripts/action/summary.py). Exits with
#                       relaychaos's own status: 0 every check held, 1 a check failed, 3 a scenario not exercised,
#                       2 the harness could not run (also a bad input, said with its fix).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

fail() {
  echo "relaychaos action: $*" >&2
  exit 2
}

[ -n "${RUNNER_TEMP:-}" ] || fail "RUNNER_TEMP is not set; GitHub sets it; fix: outside GitHub set it to a folder"
[ -n "${GITHUB_OUTPUT:-}" ] || fail "GITHUB_OUTPUT is not set; GitHub sets it; fix: outside GitHub set it to a file"
venv="$RUNNER_TEMP/relaychaos-venv"
toxiproxy_dir="$RUNNER_TEMP/relaychaos-toxiproxy"

output() {
  echo "$1=$2" >>"$GITHUB_OUTPUT"
}

install() {
  local source="${RELAYCHAOS_SOURCE:-}" python="${PYTHON:-python3}"
  [ -n "$source" ] || source="${GITHUB_ACTION_PATH:-}"
  [ -n "$source" ] || fail "neither RELAYCHAOS_SOURCE nor GITHUB_ACTION_PATH (the action's checkout) is set;" \
    "fix: set one of them to what pip should install"
  if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
    fail "relaychaos needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1 || echo "not on PATH");" \
      "fix: add actions/setup-python (python-version: \"3.12\") before this action"
  fi
  if [ ! -x "$venv/bin/relaychaos" ] || [ "$(cat "$venv/.relaychaos-source" 2>/dev/null)" != "$source" ]; then
    echo "relaychaos action: installing relaychaos from $source into $venv ..."
    "$python" -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check "$source" ||
      fail "pip could not install relaychaos from '$source' (its output is above); fix: give the input" \
        "'relaychaos' a pip requirement (relaychaos==X.Y.Z, a git URL, a wheel or a folder), or leave it empty"
    echo "$source" >"$venv/.relaychaos-source"
  fi
  "$venv/bin/relaychaos" --version
  output venv "$venv"
  output toxiproxy-dir "$toxiproxy_dir"
  output toxiproxy-version "$("$venv/bin/python" -c 'from relaychaos.stack import toxiproxy_server; print(toxiproxy_server.VERSION)')"
}

toxiproxy() {
  [ -x "$venv/bin/relaychaos" ] || fail "no relaychaos in $venv; fix: run the install phase first (steps.sh install)"
  if command -v go >/dev/null 2>&1; then
    "$venv/bin/relaychaos" setup toxiproxy --dest "$toxiproxy_dir"
    return
  fi
  local version arch
  version="$("$venv/bin/python" -c 'from relaychaos.stack import toxiproxy_server; print(toxiproxy_server.VERSION)')"
  case "$(uname -m)" in
    x86_64) arch=amd64 ;;
    aarch64 | arm64) arch=arm64 ;;
    *) fail "no Go on PATH and no Toxiproxy release binary for $(uname -m); fix: add actions/setup-go before this action" ;;
  esac
  local url="https://github.com/Shopify/toxiproxy/releases/download/$version/toxiproxy-server-linux-$arch"
  echo "relaychaos action: no Go on PATH; downloading $url"
  curl --fail --silent --show-error --location --retry 3 -o "$RUNNER_TEMP/toxiproxy-server-download" "$url" ||
    fail "could not download $url; fix: add actions/setup-go before this action, so that the server is built with Go"
  "$venv/bin/relaychaos" setup toxiproxy --from "$RUNNER_TEMP/toxiproxy-server-download" --dest "$toxiproxy_dir"
}

run() {
  [ -x "$venv/bin/relaychaos" ] || fail "no relaychaos in $venv; fix: run the install phase first (steps.sh install)"
  local out="${OUT:-relaychaos-run}" args=()
  case "${SANDBOX:-auto}" in
    auto | strict | off) args+=(--sandbox "${SANDBOX:-auto}") ;;
    *) fail "the input sandbox is '$SANDBOX'; fix: auto, strict or off" ;;
  esac
  case "${HUNT:-false}" in
    true) args+=(--hunt) ;;
    false) ;;
    *) fail "the input hunt is '$HUNT'; fix: true or false" ;;
  esac
  if [ -n "${WORKERS:-}" ]; then
    [[ "$WORKERS" =~ ^[0-9]+$ ]] || fail "the input workers is '$WORKERS'; fix: a whole number (0: one process)"
    args+=(-n "$WORKERS")
  fi
  [ -z "${RELAY:-}" ] || args+=(--relay "$RELAY")
  [ -z "${BUDGET:-}" ] || export RELAYCHAOS_BUDGET="$BUDGET"
  [ ! -x "$toxiproxy_dir/toxiproxy-server" ] || export RELAYCHAOS_TOOLS_BIN="$toxiproxy_dir"
  export RELAYCHAOS_FOUND_DIR="${RELAYCHAOS_FOUND_DIR:-$out/found}" # a failing random story's file, uploaded with it
  local status=0
  "$venv/bin/relaychaos" run --out "$out" "${args[@]}" || status=$?
  out="$(realpath -m "$out")"
  output run-folder "$out"
  output exit-code "$status"
  [ ! -f "$out/results.json" ] || output results "$out/results.json"
  [ ! -f "$out/junit.xml" ] || output junit "$out/junit.xml"
  if [ -n "${GITHUB_STEP_SUMMARY:-}" ]; then
    "$venv/bin/python" "$here/summary.py" "$out" "$status" "${ARTIFACT:-}" >>"$GITHUB_STEP_SUMMARY" ||
      echo "relaychaos action: the job summary could not be written (the reason is above)" >&2
  fi
  exit "$status"
}

case "${1:-}" in
  install | toxiproxy | run) "$1" ;;
  *) fail "usage: steps.sh install|toxiproxy|run (got '${1:-}')" ;;
esac
