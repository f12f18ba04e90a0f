#!/usr/bin/env bash
# A Docker engine and a local Toxiproxy image, for the harness's Docker route, on a Debian
# machine where no registry can be reached (run as root):
#
#   bash scripts/docker_toxiproxy.sh          # set up (each step skipped when already done)
#   bash scripts/docker_toxiproxy.sh stop     # stop the dockerd this script started
#
# Set up:
# 1. docker.io from the OS packages (apt-get), when there is no dockerd;
# 2. `dockerd --iptables=false --bridge=none` in the background, when no daemon answers
#    (its log and pid file in $RELAYCHAOS_DOCKERD_DIR, default /tmp/relaychaos-dockerd/);
# 3. a static toxiproxy-server built with Go into tools/docker/ (once);
# 4. `docker import` of it as $RELAYCHAOS_LOCAL_IMAGE (default relaychaos/toxiproxy:2.12.0-local),
#    with the official image's entrypoint (/toxiproxy, taking -host H -port P).
# Then: RELAYCHAOS_TOXIPROXY=docker RELAYCHAOS_TOXIPROXY_IMAGE=relaychaos/toxiproxy:2.12.0-local
# Exits non-zero with one message on the first step that fails.
set -uo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
TOXIPROXY_VERSION=v2.12.0
state=${RELAYCHAOS_DOCKERD_DIR:-/tmp/relaychaos-dockerd}
image=${RELAYCHAOS_LOCAL_IMAGE:-relaychaos/toxiproxy:2.12.0-local}
binary=$root/tools/docker/toxiproxy
log=$state/setup.log

say() { echo "docker_toxiproxy: $*"; }
die() {  # die WHAT FIX: one message, then the end of the log that explains it
  echo "docker_toxiproxy: error: $1; fix: $2" >&2
  if [ -s "$log" ]; then echo "docker_toxiproxy: last lines of $log:" >&2; tail -n 8 "$log" | sed 's/^/  | /' >&2; fi
  exit 1
}
answers() { timeout 10 docker info >/dev/null 2>&1; }
is_alive() {  # is_alive PID: a process that runs (not a zombie waiting to be reaped)
  [ -e "/proc/$1/status" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null
}
is_live() {  # is_live PID NAME: a live NAME process
  [ "$(cat "/proc/$1/comm" 2>/dev/null)" = "$2" ] && is_alive "$1"
}
is_dockerd() { is_live "$1" dockerd; }
clear_stale() {  # clear_stale PIDFILE NAME: remove a pid file left by a NAME that was killed; dockerd trips on it
  local pid; pid=$(cat "$1" 2>/dev/null) || return 0
  is_live "$pid" "$2" && return 0
  rm -f "$1"; say "removed the stale $1 (process $pid is no live $2)"
}
seconds() { local ms=$(( ($(date +%s%N) - $1) / 1000000 )); printf "%d.%d" $((ms / 1000)) $((ms % 1000 / 100)); }

stop() {
  local pid
  pid=$(cat "$state/dockerd.pid" 2>/dev/null) || { say "no dockerd started by this script ($state/dockerd.pid absent)"; return 0; }
  if ! is_dockerd "$pid"; then
    say "dockerd $pid is not running; removing its stale pid file"; rm -f "$state/dockerd.pid"; return 0
  fi
  kill -TERM "$pid"
  for _ in $(seq 1 100); do is_dockerd "$pid" || break; sleep 0.2; done
  if is_dockerd "$pid"; then kill -KILL "$pid"; say "dockerd $pid did not stop within 20 s: killed"; fi
  rm -f "$state/dockerd.pid"
  say "stopped dockerd $pid"
}

install_engine() {
  command -v dockerd >/dev/null 2>&1 && return 0
  [ "$(id -u)" = 0 ] || die "dockerd is not installed and installing docker.io needs root" \
    "run this script as root, or install Docker yourself"
  command -v apt-get >/dev/null 2>&1 || die "dockerd is not installed and there is no apt-get to install docker.io" \
    "install a Docker engine for this OS (https://docs.docker.com/engine/install/)"
  local t0; t0=$(date +%s%N)
  say "installing docker.io with apt-get ..."
  local wait=(-o DPkg::Lock::Timeout=120)  # another apt-get may be running: wait for it, within bounds
  { apt-get "${wait[@]}" update -q && DEBIAN_FRONTEND=noninteractive \
      apt-get "${wait[@]}" install -y -q --no-install-recommends docker.io; } \
    >>"$log" 2>&1 || die "apt-get could not install docker.io" "read $log (is Debian's package archive reachable?)"
  command -v dockerd >/dev/null 2>&1 || die "docker.io is installed but there is no dockerd on PATH" "read $log"
  say "installed docker.io in $(seconds "$t0") s ($(dockerd --version))"
}

start_daemon() {
  if answers; then say "a Docker daemon answers already (server $(docker version -f '{{.Server.Version}}' 2>/dev/null))"; return 0; fi
  [ "$(id -u)" = 0 ] || die "no Docker daemon answers and starting dockerd needs root" "run this script as root"
  local t0 pid; t0=$(date +%s%N)
  clear_stale /var/run/docker.pid dockerd
  clear_stale /var/run/docker/containerd/containerd.pid containerd
  say "starting dockerd --iptables=false --bridge=none (log $state/dockerd.log) ..."
  # Not `setsid dockerd &`: where the caller has job control, the background job leads its process
  # group, so setsid forks, $! is a setsid that has already exited, and a dockerd slow to answer was
  # taken for one that died (and left running). A forked child leads nothing: it can setsid itself.
  pid=$(python3 -c 'import os, sys
pid = os.fork()
if pid:
    print(pid)
    sys.exit(0)
os.setsid()
out = os.open(sys.argv[1], os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
os.dup2(os.open(os.devnull, os.O_RDONLY), 0)
os.dup2(out, 1)
os.dup2(out, 2)
os.execvp("dockerd", ["dockerd", "--iptables=false", "--bridge=none"])' "$state/dockerd.log") \
    || die "could not start dockerd (python3 forks it into a session of its own)" "install python3"
  echo "$pid" >"$state/dockerd.pid"
  for _ in $(seq 1 120); do
    answers && { say "dockerd $pid answers after $(seconds "$t0") s (pid file $state/dockerd.pid)"; return 0; }
    is_alive "$pid" || { rm -f "$state/dockerd.pid"; log=$state/dockerd.log
      die "dockerd exited during startup" "read $state/dockerd.log"; }
    sleep 0.5
  done
  stop >/dev/null; log=$state/dockerd.log
  die "dockerd did not answer \`docker info\` within 60 s (stopped it again)" "read $state/dockerd.log"
}

build_binary() {
  if [ -x "$binary" ]; then return 0; fi
  command -v go >/dev/null 2>&1 || die "no 'go' on PATH to build a static toxiproxy-server" \
    "install Go (https://go.dev/dl/), or put a static toxiproxy-server at $binary"
  local t0; t0=$(date +%s%N)
  say "building a static toxiproxy-server $TOXIPROXY_VERSION into $binary ..."
  mkdir -p "$root/tools/docker"
  CGO_ENABLED=0 GOBIN="$root/tools/docker" GOFLAGS=-mod=mod \
    go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION" >>"$log" 2>&1 \
    || die "go install of toxiproxy $TOXIPROXY_VERSION failed" "read $log (is the Go module proxy reachable?)"
  mv "$root/tools/docker/server" "$binary"
  say "built $binary in $(seconds "$t0") s"
}

import_image() {
  if docker image inspect "$image" >/dev/null 2>&1; then say "image $image is present"; return 0; fi
  build_binary
  local t0 rootfs; t0=$(date +%s%N)
  rootfs=$(mktemp -d) && cp "$binary" "$rootfs/toxiproxy" || die "could not stage $binary in a temporary folder" "check /tmp"
  tar -C "$rootfs" -c toxiproxy 2>>"$log" | docker import --change 'ENTRYPOINT ["/toxiproxy"]' \
    --change 'CMD ["-host=0.0.0.0"]' --change 'EXPOSE 8474' - "$image" >>"$log" 2>&1
  local rc=$?
  rm -rf "$rootfs"
  [ $rc = 0 ] || die "docker import of $binary as $image failed" "read $log"
  say "imported $image in $(seconds "$t0") s"
}

mkdir -p "$state" || { echo "docker_toxiproxy: error: cannot create $state; fix: set RELAYCHAOS_DOCKERD_DIR" >&2; exit 1; }
case "${1:-setup}" in
  stop) stop ;;
  setup)
    : >"$log"
    install_engine
    start_daemon
    import_image
    say "ready: RELAYCHAOS_TOXIPROXY=docker RELAYCHAOS_TOXIPROXY_IMAGE=$image" ;;
  *) echo "usage: $0 [setup|stop]" >&2; exit 2 ;;
esac
