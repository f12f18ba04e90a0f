#!/usr/bin/env bash
# A headless Chromium for the report's browser test (tests/test_report_browser.py), from the OS
# packages, when none is installed (run as root on a Debian machine):
#
#   bash scripts/chromium.sh          # prints the browser found or installed; exits 1 with the reason
#
# The test finds the browser itself (RELAYCHAOS_CHROMIUM, else chromium, chromium-browser,
# google-chrome on PATH) and skips, printing why, where there is none. apt-get waits up to
# 120 s for another apt-get holding its lock. The log is $RELAYCHAOS_CHROMIUM_LOG
# (default /tmp/relaychaos-chromium.log).
set -uo pipefail
log=${RELAYCHAOS_CHROMIUM_LOG:-/tmp/relaychaos-chromium.log}

say() { echo "chromium: $*"; }
die() {  # die WHAT FIX
  echo "chromium: error: $1; fix: $2" >&2
  if [ -s "$log" ]; then echo "chromium: last lines of $log:" >&2; tail -n 8 "$log" | sed 's/^/  | /' >&2; fi
  exit 1
}
found() {
  local b
  for b in "${RELAYCHAOS_CHROMIUM:-}" chromium chromium-browser google-chrome; do
    [ -n "$b" ] && command -v "$b" >/dev/null 2>&1 && { command -v "$b"; return 0; }
  done
  return 1
}

if browser=$(found); then say "found $browser ($("$browser" --version 2>/dev/null))"; exit 0; fi
[ "$(id -u)" = 0 ] || die "no Chromium is installed and installing one needs root" \
  "run this script as root, or install chromium yourself (or set RELAYCHAOS_CHROMIUM)"
command -v apt-get >/dev/null 2>&1 || die "no Chromium is installed and there is no apt-get to install one" \
  "install Chromium or Chrome for this OS and put it on PATH (or set RELAYCHAOS_CHROMIUM)"
t0=$(date +%s)
say "installing chromium with apt-get (log $log) ..."
wait=(-o DPkg::Lock::Timeout=120)  # another apt-get may be running: wait for it, within bounds
: >"$log"
{ apt-get "${wait[@]}" update -q && DEBIAN_FRONTEND=noninteractive \
    apt-get "${wait[@]}" install -y -q --no-install-recommends chromium; } >>"$log" 2>&1 \
  || die "apt-get could not install chromium" "read $log (is Debian's package archive reachable? is apt locked?)"
browser=$(found) || die "chromium is installed but not on PATH" "read $log"
say "installed $browser in $(( $(date +%s) - t0 )) s ($("$browser" --version 2>/dev/null))"
