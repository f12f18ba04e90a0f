#!/bin/sh
# Throw-away PostgreSQL for the tests: scripts/pg.sh start|stop
# Data dir /tmp/pgpay (owned by nobody), port 55432, socket dir /tmp.
set -eu
PGBIN=${PGBIN:-/usr/lib/postgresql/15/bin}
PGDATA=${PGDATA:-/tmp/pgpay}
PGPORT=${PGPORT:-55432}
as_nobody() {
  if [ "$(id -u)" = 0 ]; then su nobody -s /bin/sh -c "$*"; else sh -c "$*"; fi
}
case "${1:-}" in
start)
  if [ ! -f "$PGDATA/PG_VERSION" ]; then
    mkdir -p "$PGDATA"
    [ "$(id -u)" = 0 ] && chown nobody "$PGDATA"
    as_nobody "nice -n 19 $PGBIN/initdb -D $PGDATA -U postgres --auth=trust >/tmp/pgpay-initdb.log 2>&1"
  fi
  as_nobody "nice -n 19 $PGBIN/pg_ctl -D $PGDATA -o '-p $PGPORT -k /tmp -c listen_addresses=127.0.0.1 -c fsync=off' -l /tmp/pgpay.log -w start"
  echo "DATABASE_URL=postgresql://postgres@127.0.0.1:$PGPORT/postgres?sslmode=disable"
  ;;
stop)
  as_nobody "$PGBIN/pg_ctl -D $PGDATA -m fast -w stop" || true
  ;;
*) echo "usage: $0 start|stop" >&2; exit 2 ;;
esac
