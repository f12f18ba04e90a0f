"""The reference relay, plus: as serve starts (before it is ready), it fills the account system's own log
through its proxy (ACCOUNT_URL), within every bound the account system has (each body under 8 KiB, each arriving
at once), so that the fixture keeps it and the harness reads it back with the run's statistics.

ATTACK=calls: 150 POST /transfer whose 7 KiB body is a JSON object of 1,700 empty objects (a Python object of
about 120 KB once parsed); ATTACK=queries: 3,000 GET /transfer/{guid} with a GUID of 8,000 characters.
"""

import asyncio
import json
import os
import sys

from aiohttp import ClientError, ClientSession

from .reference.__main__ import main

CALLS, QUERIES, AT_ONCE = 150, 3000, 8


async def flood(attack: str) -> None:
    base = os.environ["ACCOUNT_URL"]
    body = json.dumps({"guid": "flood", "pad": [{}] * 1700})
    sent = refused = 0

    async def one(session: ClientSession, i: int) -> None:
        nonlocal sent, refused
        try:
            if attack == "calls":
                async with session.post(f"{base}/transfer", data=body.replace("flood", f"flood{i}", 1)) as r:
                    await r.read()
            else:
                async with session.get(f"{base}/transfer/{i:08d}{'q' * 7992}") as r:
                    await r.read()
            sent += 1
        except ClientError:
            refused += 1

    async with ClientSession(headers={"Content-Type": "application/json"}) as session:
        total = CALLS if attack == "calls" else QUERIES
        for start in range(0, total, AT_ONCE):
            await asyncio.gather(*(one(session, i) for i in range(start, min(total, start + AT_ONCE))))
    print(f"ATTACK account_flood/{attack}: {sent} requests the account system took, {refused} refused", flush=True)


if __name__ == "__main__":
    if sys.argv[1:2] == ["serve"]:
        asyncio.run(flood(os.environ.get("ATTACK", "calls")))
    sys.exit(main(sys.argv[1:]))
