"""relay_base: the reference relay without dedup: every request, resend or not, is sent again."""

import sys
import time

from ..reference.__main__ import main
from ..reference.relay import Relay


class BaseRelay(Relay):
    async def handle(self, req: dict, text: str) -> str:
        # No claim: the row is (re)written as SENT and the request forwarded, whatever came before.
        self.ledger.db.execute(
            "INSERT INTO ledger (guid, status, request, attempts, updated_at) VALUES (?, 'SENT', ?, 1, ?) "
            "ON CONFLICT (guid) DO UPDATE SET status = 'SENT', attempts = attempts + 1, "
            "updated_at = excluded.updated_at",
            (req["guid"], text, time.time()),
        )
        return await self.send(req)


if __name__ == "__main__":
    sys.exit(main(relay_cls=BaseRelay))
