#!/usr/bin/env bash
# Builds the release binary into bin/relay. Safe to run twice.
set -euo pipefail
cd "$(dirname "$0")"
# The build folder lies outside the relay's (tools/ of the checkout, ignored by git): a sandbox copies the
# relay's folder whole for every run, and cargo's 80 MB of intermediates have no business there.
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/../../tools/rust-target}"
locked=""; [ -f Cargo.lock ] && locked="--locked"
cargo build --release $locked
mkdir -p bin
install -m 0755 "$CARGO_TARGET_DIR/release/relay" bin/relay.tmp
mv -f bin/relay.tmp bin/relay
echo "built $(pwd)/bin/relay"
