#!/bin/sh
# Install the exact dependencies of package-lock.json into ./node_modules (safe to run again).
set -eu
cd "$(dirname "$0")"
npm ci --no-audit --no-fund
