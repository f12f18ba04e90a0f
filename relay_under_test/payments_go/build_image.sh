#!/bin/sh
# Builds the local image relaychaos/payments-go:local (or $RELAYCHAOS_PAYMENTS_IMAGE) from the Dockerfile here:
# a static bin/payments (CGO_ENABLED=0, so that it needs no libc) in an image FROM scratch. No registry is
# needed: `scratch` is no image to pull. Needs Go (as build.sh) and a Docker engine that answers
# (`bash scripts/docker_toxiproxy.sh` starts one, as root). container/relay.toml runs the image.
set -eu
cd "$(dirname "$0")"
image=${RELAYCHAOS_PAYMENTS_IMAGE:-relaychaos/payments-go:local}
say() { echo "payments_go/build_image: $*"; }
die() { echo "payments_go/build_image: error: $1; fix: $2" >&2; exit 1; }
command -v go >/dev/null 2>&1 || die "no 'go' on PATH to build the service" "install Go (https://go.dev/dl/)"
command -v docker >/dev/null 2>&1 || die "no 'docker' on PATH" "install docker.io (scripts/docker_toxiproxy.sh does, as root)"
timeout 10 docker info >/dev/null 2>&1 || die "no Docker daemon answers" "start one: bash scripts/docker_toxiproxy.sh (as root)"
context=$(mktemp -d)
trap 'rm -rf "$context"' EXIT
CGO_ENABLED=0 GOFLAGS=-mod=mod go build -trimpath -ldflags='-s -w' -o "$context/payments" . \
  || die "go build of the service failed (above)" "correct the Go code, or warm the module cache (GOFLAGS=-mod=mod)"
cp Dockerfile "$context/"
previous=$(docker image inspect --format '{{.Id}}' "$image" 2>/dev/null || true)
# the classic builder: it needs neither BuildKit nor the buildx plugin, and FROM scratch pulls nothing
DOCKER_BUILDKIT=0 docker build --quiet --tag "$image" "$context" >/dev/null 2>"$context/build.log" \
  || { cat "$context/build.log" >&2; die "docker build of $image failed (above)" "read the message above"; }
now=$(docker image inspect --format '{{.Id}}' "$image")
if [ -n "$previous" ] && [ "$previous" != "$now" ]; then docker rmi "$previous" >/dev/null 2>&1 || true; fi  # no dangling copies
say "built $image ($(docker image inspect --format '{{.Size}}' "$image") bytes)"
