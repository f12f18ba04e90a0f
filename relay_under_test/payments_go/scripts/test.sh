#!/bin/sh
# Starts a throw-away PostgreSQL (scripts/pg.sh), runs the Go tests against it
# at the lowest CPU priority, and stops the database again.
set -eu
cd "$(dirname "$0")/.."
export GOFLAGS=-mod=mod
PGPORT=${PGPORT:-55432}
./scripts/pg.sh start >/dev/null
trap './scripts/pg.sh stop >/dev/null' EXIT INT TERM
export TEST_DATABASE_URL="postgresql://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
nice -n 19 go vet ./...
nice -n 19 go test -count=1 -v "$@" ./...
