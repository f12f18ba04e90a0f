#!/usr/bin/env bash
# Gradescope: the autograder's setup script, run once as root when Gradescope builds the autograder
# image (its Ubuntu 22.04 base image). Zip it with run_autograder at the root of the zip (the files,
# not their folder), and either a copy of relaychaos as relaychaos/ beside them or RELAYCHAOS_GIT
# set below. See docs/grading.md.
#
# It installs Python 3.11 (Ubuntu's package, else the deadsnakes PPA), Go (checked against go.dev's
# published SHA-256; scripts/bootstrap.sh builds Toxiproxy with it), and the runtimes your students'
# relays need (STUDENT_PACKAGES); puts relaychaos in /autograder/relaychaos and bootstraps it there.
set -euo pipefail

RELAYCHAOS_GIT=""                 # e.g. https://github.com/<you>/relaychaos.git; empty: use ./relaychaos from the zip
RELAYCHAOS_REF=main               # the branch or tag to clone
GO_VERSION=1.26.8                 # scripts/bootstrap.sh is tested with it (Toxiproxy needs 1.23+, the Go relay 1.26+)
STUDENT_PACKAGES=""               # apt packages of the students' runtimes, e.g. "openjdk-17-jdk-headless nodejs"
DEST=/autograder/relaychaos

export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends ca-certificates curl git software-properties-common

# 1. Python 3.11 with venv.
if ! python3.11 -c 'import venv' 2>/dev/null; then
  if ! apt-get install -y -q python3.11 python3.11-venv; then
    add-apt-repository -y ppa:deadsnakes/ppa
    apt-get update -q
    apt-get install -y -q python3.11 python3.11-venv
  fi
fi

# 2. Go, from go.dev, its archive checked against the SHA-256 go.dev publishes for it.
arch=$(dpkg --print-architecture)   # amd64 or arm64, as Go names them
archive="go$GO_VERSION.linux-$arch.tar.gz"
if [ "$(/usr/local/go/bin/go env GOVERSION 2>/dev/null)" != "go$GO_VERSION" ]; then
  want=$(curl -fsSL 'https://go.dev/dl/?mode=json&include=all' | python3.11 -c '
import json, sys
name = sys.argv[1]
print(next(f["sha256"] for r in json.load(sys.stdin) for f in r["files"] if f["filename"] == name))' "$archive")
  curl -fsSL -o "/tmp/$archive" "https://go.dev/dl/$archive"
  echo "$want  /tmp/$archive" | sha256sum -c -
  rm -rf /usr/local/go && tar -C /usr/local -xzf "/tmp/$archive" && rm "/tmp/$archive"
fi
export PATH=/usr/local/go/bin:$PATH

# 3. The runtimes the students' relays run on.
if [ -n "$STUDENT_PACKAGES" ]; then
  # shellcheck disable=SC2086  # a list of package names
  apt-get install -y -q --no-install-recommends $STUDENT_PACKAGES
fi

# 4. relaychaos itself, bootstrapped: .venv, tools/bin/toxiproxy-server, the bundled relays.
rm -rf "$DEST"
if [ -n "$RELAYCHAOS_GIT" ]; then
  git clone --depth 1 --branch "$RELAYCHAOS_REF" "$RELAYCHAOS_GIT" "$DEST"
elif [ -d /autograder/source/relaychaos ]; then
  cp -a /autograder/source/relaychaos "$DEST"
  rm -rf "$DEST/.venv"   # a virtual environment made elsewhere holds that machine's paths
else
  echo "setup.sh: no relaychaos: put a copy in the zip as relaychaos/, or set RELAYCHAOS_GIT" >&2
  exit 1
fi
cd "$DEST"
PYTHON=python3.11 bash scripts/bootstrap.sh
.venv/bin/relaychaos --help >/dev/null
echo "setup.sh: relaychaos ready in $DEST"
