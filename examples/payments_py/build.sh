#!/usr/bin/env bash
# Builds the service's own virtual environment (venv) with its one dependency, psycopg 3.
# Safe to run twice: skips the install when venv already holds the pinned versions.
set -euo pipefail
cd "$(dirname "$0")"
PY="${PYTHON:-python3.11}"
if [ ! -x venv/bin/python ]; then
  "$PY" -m venv venv
fi
if ! venv/bin/python -c 'import psycopg, psycopg_pool, psycopg_binary' 2>/dev/null; then
  venv/bin/pip install --quiet 'psycopg[binary]==3.2.*' 'psycopg-pool==3.2.*'
fi
venv/bin/python -c 'import psycopg; print("payments_py: psycopg", psycopg.__version__, "libpq", psycopg.pq.version())'
