"""paysvc serve | settle --stale-after D | retry-unsent --limit-attempts N |
expire-keys --ttl D   (durations: 500ms, 2s, 1.5s)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import threading
import time

from paysvc import api, batch, config
from paysvc.durations import parse_duration
from paysvc.store import Store

log = logging.getLogger("paysvc")


def _duration(text: str) -> float:
    try:
        return parse_duration(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from exc


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="paysvc", description=__doc__)
    p.add_argument("--variant", default="", help=argparse.SUPPRESS)
    sub = p.add_subparsers(dest="command", required=True)
    sub.add_parser("serve", help="run the HTTP API")
    s = sub.add_parser("settle", help="reconcile pending/in_doubt keys with the PSP")
    s.add_argument("--stale-after", type=_duration, required=True,
                   help="only keys unchanged for this long (e.g. 2s, 750ms)")
    r = sub.add_parser("retry-unsent", help="send not_sent keys again, with the same key")
    r.add_argument("--limit-attempts", type=int, required=True,
                   help="only keys tried fewer times than this")
    e = sub.add_parser("expire-keys", help="delete completed/declined keys")
    e.add_argument("--ttl", type=_duration, required=True,
                   help="only keys unchanged for this long (e.g. 24h, 500ms)")
    return p


def _open_store(dsn: str, connections: int, wait_s: float) -> Store:
    give_up = time.monotonic() + wait_s
    while True:
        store = Store(dsn, max_connections=connections)
        try:
            store.open(wait_s=min(5.0, max(0.5, give_up - time.monotonic())))
            return store
        except Exception as exc:  # noqa: BLE001 - retried until wait_s, then fatal
            store.close()
            if time.monotonic() >= give_up:
                raise
            log.warning("database not ready yet: %r", exc)
            time.sleep(0.3)


def _serve(settings: config.Settings) -> int:
    store = _open_store(settings.dsn, connections=8, wait_s=20.0)
    host = os.environ.get("PAYSVC_LISTEN_HOST", "0.0.0.0")
    server = api.make_server(host, settings.port, api.PaymentsApp(settings, store))
    stop = threading.Event()

    def on_signal(signum: int, _frame: object) -> None:
        stop.set()
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    log.info("serving on %s:%d (psp %s, time-out %.3fs)", host, settings.port,
             settings.psp_base_url, settings.psp_timeout_s)
    try:
        server.serve_forever(poll_interval=0.2)
    finally:
        server.server_close()
        store.close()
    return 0


def _launched_at() -> float:
    """When the command was launched (bin/paysvc stamps it), else now: ages are measured from it."""
    try:
        return float(os.environ["PAYSVC_LAUNCHED_AT"])
    except (KeyError, ValueError):
        return time.time()


def main(argv: list[str] | None = None) -> int:
    launched_at = _launched_at()
    logging.basicConfig(level=logging.INFO, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s [%(process)d] %(message)s")
    logging.getLogger("psycopg.pool").setLevel(logging.WARNING)
    args = _parser().parse_args(argv)
    config.VARIANT = args.variant
    try:
        settings = config.load(need_port=args.command == "serve")
    except (config.ConfigError, ValueError) as exc:
        print(f"paysvc: {exc}", file=sys.stderr)
        return 2
    if args.command == "serve":
        return _serve(settings)
    try:
        store = _open_store(settings.dsn, connections=2, wait_s=5.0)
    except Exception as exc:  # noqa: BLE001
        print(f"paysvc {args.command}: database unreachable: {exc!r}", file=sys.stderr)
        return 2
    try:
        if args.command == "settle":
            return batch.settle(settings, store, args.stale_after, launched_at)
        if args.command == "retry-unsent":
            return batch.retry_unsent(settings, store, args.limit_attempts)
        return batch.expire_keys(store, args.ttl, launched_at)
    except Exception as exc:  # noqa: BLE001
        print(f"paysvc {args.command}: stopped: {exc!r}", file=sys.stderr)
        return 1
    finally:
        store.close()


if __name__ == "__main__":
    sys.exit(main())
