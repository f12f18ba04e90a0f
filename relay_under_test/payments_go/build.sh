#!/bin/sh
# Builds bin/payments. Needs Go >= 1.26 and the module proxy (or a warm module cache).
set -eu
cd "$(dirname "$0")"
export GOFLAGS=-mod=mod
mkdir -p bin
go build -trimpath -o bin/payments .
echo "built $(pwd)/bin/payments"
