import argparse
import json
import re
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .config import Config
from .store import Store
from . import upstream

GUID_PATTERN = re.compile(r"[A-Za-z0-9_-]{1,64}")


def check(body: bytes):
    """Return (request dict, original text) or None if malformed."""
    try:
        text = body.decode("utf-8")
        req = json.loads(text)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return None
    if not isinstance(req, dict):
        return None
    if any(k not in req for k in ("guid", "from", "to", "amount")):
        return None
    if not isinstance(req["guid"], str) or GUID_PATTERN.fullmatch(req["guid"]) is None:
        return None
    if not isinstance(req["from"], str) or not isinstance(req["to"], str):
        return None
    if isinstance(req["amount"], bool) or not isinstance(req["amount"], int) or req["amount"] < 1:
        return None
    return req, text


class Relay:
    def __init__(self, cfg: Config):
        self.cfg = cfg
        self.store = Store(cfg.ledger_path)

    def transfer(self, req: dict, text: str) -> str:
        g = req["guid"]
        if not self.store.claim_new(g, text):
            row = self.store.get(g)
            if row is None:
                if not self.store.claim_new(g, text):
                    return upstream.out(g, "E903", "in flight")
            else:
                status, stored, response = row
                first = json.loads(stored)
                if (first["from"], first["to"], first["amount"]) != (req["from"], req["to"], req["amount"]):
                    return upstream.out(g, "E904", "guid was used for a different transfer")
                if status == "DONE":
                    return response
                if status == "UNKNOWN":
                    return upstream.out(g, "E901", "outcome unknown")
                if status != "FAILED" or not self.store.claim_failed(g):
                    return upstream.out(g, "E903", "in flight")
        st, code, response = upstream.post_transfer(self.cfg, req)
        self.store.record(g, st, code, response)
        return response


def make_handler(relay: Relay):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):
            pass

        def _json(self, status: int, text: str):
            payload = text.encode("utf-8")
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_GET(self):
            if self.path == "/health":
                self._json(200, '{"healthy": true}')
            else:
                self._json(404, '{"code": "E404"}')

        def do_POST(self):
            size = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(size)
            if self.path != "/transfer":
                self._json(404, '{"code": "E404"}')
                return
            parsed = check(body)
            if parsed is None:
                self._json(400, json.dumps({"guid": None, "code": "E400", "message": "malformed"}))
                return
            self._json(200, relay.transfer(*parsed))

    return Handler


def main():
    ap = argparse.ArgumentParser(prog="relay")
    sp = ap.add_subparsers(dest="command", required=True)
    sp.add_parser("serve")
    sp.add_parser("resolve").add_argument("--min-age", type=float, required=True)
    sp.add_parser("reprocess").add_argument("--max-attempts", type=int, required=True)
    sp.add_parser("purge").add_argument("--retention", type=float, required=True)
    args = ap.parse_args()
    cfg = Config.from_env()
    relay = Relay(cfg)

    if args.command == "serve":
        server = ThreadingHTTPServer((cfg.host, cfg.port), make_handler(relay))
        server.daemon_threads = True
        server.serve_forever()
    elif args.command == "resolve":
        for guid, status in relay.store.stale(args.min_age):
            kind, code = upstream.query(cfg, guid)
            if kind == "found":
                relay.store.resolve_done(guid, status, code, upstream.out(guid, code, "resolved"))
            elif kind == "absent":
                relay.store.resolve_failed(guid, status)
    elif args.command == "reprocess":
        for guid, text in relay.store.retryable(args.max_attempts):
            if not relay.store.claim_failed(guid, args.max_attempts):
                continue
            st, code, response = upstream.post_transfer(cfg, json.loads(text))
            relay.store.record(guid, st, code, response)
    elif args.command == "purge":
        relay.store.purge(args.retention)


if __name__ == "__main__":
    main()
