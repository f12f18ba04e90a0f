#!/usr/bin/env bash
# Install what relaychaos needs, once: a virtual environment with the project
# in it (.venv) and the Toxiproxy server (tools/bin/toxiproxy-server).
# Safe to run again: each step is skipped when its result is already there.
#
#   bash scripts/bootstrap.sh                everything (make bootstrap, make run, make test)
#   bash scripts/bootstrap.sh --python-only  step 1 alone, the Python side: all that make lint and
#                                            make check need (they start no process), no root, no apt
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
TOXIPROXY_VERSION=v2.12.0

python=${PYTHON:-python3}
if ! "$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' 2>/dev/null; then
  echo "bootstrap: relaychaos needs Python 3.11 or newer; '$python' is $("$python" --version 2>&1 || echo missing)." >&2
  echo "bootstrap: fix: install Python 3.11+ and run again with PYTHON=/path/to/python3.11." >&2
  exit 2
fi

# 1. The virtual environment, rebuilt only when pyproject.toml changes.
stamp=.venv/.relaychaos-installed
want=$(sha256sum pyproject.toml | cut -d' ' -f1)
if [ ! -x .venv/bin/python ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
  echo "bootstrap: installing Python packages into .venv ..."
  [ -x .venv/bin/python ] || "$python" -m venv .venv
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  echo "$want" > "$stamp"
fi

# 1b. The import root for tools that read sys.path rather than run the editable install's import hook
#     (pyright and editors, grimp and import-linter, pydeps, jedi): a .pth putting src/ on the path, where
#     src/relaychaos is a committed link to harness/ and harness/fixtures, harness/reports, ... are committed
#     links to the mapped folders (pyproject.toml, [tool.setuptools.package-dir]); Python imports the same
#     files through it. A sandboxed relay may read the venv, so this .pth too, but not src/ or harness/ (as
#     with the editable install's own .pth). Written again when the checkout moved.
site=$(.venv/bin/python -c 'import sysconfig; print(sysconfig.get_path("purelib"))')
if [ "$(cat "$site/relaychaos-checkout.pth" 2>/dev/null)" != "$root/src" ]; then
  echo "$root/src" > "$site/relaychaos-checkout.pth"
fi

if [ "${1:-}" = --python-only ]; then
  exit 0
fi

# 2. The sandbox's network tools (iproute2's `ip`, nftables' `nft`): each relay slot's network
#    namespace, veth pair and rules are made with them. Installed from the OS packages where the
#    harness runs as root on Debian or Ubuntu and they are missing; elsewhere --sandbox auto says
#    that the network layer is missing, and --sandbox strict refuses to run.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! { command -v ip && command -v nft; } >/dev/null 2>&1; then
  echo "bootstrap: installing iproute2 and nftables (the sandbox's network layer) ..."
  if ! { apt-get install -y -qq iproute2 nftables >/dev/null 2>&1 \
         || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq iproute2 nftables >/dev/null 2>&1; }; }; then
    echo "bootstrap: could not install iproute2 and nftables; relays will run without a network namespace of" >&2
    echo "bootstrap: their own (said in every report). fix: apt-get install iproute2 nftables" >&2
  fi
fi

# 2b. The PostgreSQL server (the OS package): relays whose relay.toml keeps its ledger in PostgreSQL get
#     a throw-away cluster of it per run (relaychaos.stack.postgres). Installed where the harness runs
#     as root on Debian or Ubuntu and no server is found; elsewhere such a run says how to install it.
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1 && ! ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 \
   && ! command -v initdb >/dev/null 2>&1; then
  echo "bootstrap: installing postgresql (the Postgres ledger's server) ..."
  if ! { apt-get install -y -qq postgresql >/dev/null 2>&1 \
         || { apt-get update -qq >/dev/null 2>&1 && apt-get install -y -qq postgresql >/dev/null 2>&1; }; }; then
    echo "bootstrap: could not install postgresql; relays with a PostgreSQL ledger cannot be tested here." >&2
    echo "bootstrap: fix: apt-get install postgresql" >&2
  fi
fi

# 3. The Toxiproxy server: skipped when one is configured or already found.
if [ -n "${TOXIPROXY_URL:-}" ]; then
  echo "bootstrap: using the Toxiproxy server at TOXIPROXY_URL=$TOXIPROXY_URL"
elif command -v toxiproxy-server >/dev/null 2>&1; then
  echo "bootstrap: using $(command -v toxiproxy-server)"
elif [ -x tools/bin/toxiproxy-server ]; then
  :
elif command -v go >/dev/null 2>&1; then
  echo "bootstrap: building toxiproxy-server $TOXIPROXY_VERSION with Go (about a minute, once) ..."
  mkdir -p tools/bin
  GOBIN="$root/tools/bin" GOFLAGS=-mod=mod go install "github.com/Shopify/toxiproxy/v2/cmd/server@$TOXIPROXY_VERSION"
  mv tools/bin/server tools/bin/toxiproxy-server
else
  echo "bootstrap: no toxiproxy-server and no Go to build it; the harness will try a Docker daemon next." >&2
  echo "bootstrap: fix: install Go (https://go.dev/dl/) and run again, or set TOXIPROXY_URL to a running server." >&2
fi

# 4. The Go relay (relay_under_test/go/bin/relay), rebuilt only when its
#    sources change: the stamp holds a sha256 of its *.go files, go.mod, go.sum.
go_relay=relay_under_test/go
if command -v go >/dev/null 2>&1; then
  want=$(cd "$go_relay" && cat ./*.go go.mod go.sum | sha256sum | cut -d' ' -f1)
  if [ ! -x "$go_relay/bin/relay" ] || [ "$(cat "$go_relay/bin/.stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: building the Go relay ($go_relay/bin/relay) ..."
    (cd "$go_relay" && GOFLAGS=-mod=mod go build -o bin/relay .)
    echo "$want" > "$go_relay/bin/.stamp"
  fi
else
  echo "bootstrap: Go relay not built (no 'go' on PATH); fix: install Go 1.26+ (https://go.dev/dl/) and run scripts/bootstrap.sh again." >&2
fi

# 4b. The example payment service (relay_under_test/payments_go/bin/payments: the idempotency-key profile
#     with a PostgreSQL ledger), rebuilt only when its sources change, like the Go relay.
pay=relay_under_test/payments_go
if command -v go >/dev/null 2>&1; then
  want=$(cd "$pay" && cat ./*.go go.mod go.sum | sha256sum | cut -d' ' -f1)
  if [ ! -x "$pay/bin/payments" ] || [ "$(cat "$pay/bin/.stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: building the example payment service ($pay/bin/payments) ..."
    sh "$pay/build.sh" >/dev/null
    echo "$want" > "$pay/bin/.stamp"
  fi
fi

# 4c. The Rust relay (relay_under_test/rust/bin/relay, written from the contract by someone who had not read
#     the harness), rebuilt only when its sources change; crates from crates.io, pinned by its Cargo.lock.
rust_relay=relay_under_test/rust
if command -v cargo >/dev/null 2>&1; then
  want=$(cd "$rust_relay" && cat src/*.rs Cargo.toml Cargo.lock | sha256sum | cut -d' ' -f1)
  if [ ! -x "$rust_relay/bin/relay" ] || [ "$(cat "$rust_relay/bin/.stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: building the Rust relay ($rust_relay/bin/relay) ..."
    bash "$rust_relay/build.sh" >/dev/null
    echo "$want" > "$rust_relay/bin/.stamp"
  fi
else
  echo "bootstrap: Rust relay not built (no 'cargo' on PATH); fix: install Rust (rustup or the OS package) and run scripts/bootstrap.sh again." >&2
fi

# 4d. The second example payment service (relay_under_test/payments_node: Node.js and PostgreSQL, written from
#     docs/production-api.md by someone who had not read the harness): its packages by `npm ci`, again only
#     when its package-lock.json changes.
node_service=relay_under_test/payments_node
if command -v npm >/dev/null 2>&1; then
  want=$(sha256sum "$node_service/package-lock.json" | cut -d' ' -f1)
  if [ "$(cat "$node_service/node_modules/.stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: installing the Node payment service's packages ($node_service/node_modules) ..."
    sh "$node_service/build.sh" >/dev/null
    echo "$want" > "$node_service/node_modules/.stamp"
  fi
else
  echo "bootstrap: Node payment service not installed (no 'npm' on PATH); fix: install Node.js 20+ and run scripts/bootstrap.sh again." >&2
fi

# 4e. The third example payment service (examples/payments_py: Python and PostgreSQL, written from the
#     docs alone by someone who had not read the harness): its own venv with psycopg 3 (its build.sh skips the
#     install when the venv already holds it).
echo "bootstrap: the Python payment service's venv (examples/payments_py/venv) ..."
PYTHON="${PYTHON:-python3.11}" bash examples/payments_py/build.sh >/dev/null

# 5. The Java relay (relay_under_test/java): its classes in build/classes, the SQLite JDBC jar in
#    lib/, that jar's native library extracted to build/native (so the relay writes nothing outside
#    its folder at run time), its classes in build/relay.jar and a class-data-sharing archive
#    trained on serve (build/relay.jsa, scripts/java_cds.py). Rebuilt only when something it is made
#    from changes: the stamp holds a sha256 of src/**/*.java, the jar's version, relay.toml, the
#    training script and `java -version`.
java_relay=relay_under_test/java
SQLITE_JDBC_VERSION=3.54.1.0
sqlite_jar="$java_relay/lib/sqlite-jdbc-$SQLITE_JDBC_VERSION.jar"
if command -v java >/dev/null 2>&1 && command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1; then
  if [ ! -s "$sqlite_jar" ]; then
    echo "bootstrap: fetching sqlite-jdbc $SQLITE_JDBC_VERSION into $java_relay/lib ..."
    mkdir -p "$java_relay/lib"
    if command -v mvn >/dev/null 2>&1; then
      mvn -B -q dependency:copy "-Dartifact=org.xerial:sqlite-jdbc:$SQLITE_JDBC_VERSION" "-DoutputDirectory=$root/$java_relay/lib"
    else
      url="https://repo1.maven.org/maven2/org/xerial/sqlite-jdbc/$SQLITE_JDBC_VERSION/sqlite-jdbc-$SQLITE_JDBC_VERSION.jar"
      curl -fsSL -o "$sqlite_jar.part" "$url"
      [ "$(curl -fsSL "$url.sha1" | cut -c1-40)" = "$(sha1sum "$sqlite_jar.part" | cut -d' ' -f1)" ] || {
        echo "bootstrap: $url: checksum mismatch" >&2; rm -f "$sqlite_jar.part"; exit 1; }
      mv "$sqlite_jar.part" "$sqlite_jar"
    fi
  fi
  want=$( (cd "$java_relay" && find src -name '*.java' | LC_ALL=C sort | xargs cat; echo "sqlite-jdbc $SQLITE_JDBC_VERSION"
           cat relay.toml "$root/scripts/java_cds.py"; java -version 2>&1) | sha256sum | cut -d' ' -f1)
  if [ ! -f "$java_relay/build/native/libsqlitejdbc.so" ] || [ "$(cat "$java_relay/build/.stamp" 2>/dev/null)" != "$want" ]; then
    echo "bootstrap: building the Java relay ($java_relay/build) ..."
    (
      cd "$java_relay"
      jar_name=lib/sqlite-jdbc-$SQLITE_JDBC_VERSION.jar
      rm -rf build && mkdir -p build/native build/unpack
      find src -name '*.java' | LC_ALL=C sort > build/sources.txt
      javac -nowarn --release 17 -d build/classes -cp "$jar_name" @build/sources.txt
      os=$(java -cp "$jar_name" org.sqlite.util.OSInfo)
      (cd build/unpack && jar xf "../../$jar_name" "org/sqlite/native/$os/libsqlitejdbc.so")
      mv "build/unpack/org/sqlite/native/$os/libsqlitejdbc.so" build/native/ && rm -rf build/unpack build/sources.txt
      jar cf build/relay.jar -C build/classes .
    )
    "$root/.venv/bin/python" scripts/java_cds.py "$java_relay" \
      || echo "bootstrap: the Java relay's class-data-sharing archive was not made (above); it runs without, starting slower." >&2
    echo "$want" > "$java_relay/build/.stamp"
  fi
else
  echo "bootstrap: Java relay not built (no java/javac/jar on PATH); fix: install a JDK 17+ (e.g. apt-get install openjdk-17-jdk-headless) and run scripts/bootstrap.sh again." >&2
fi
