"""The reference relay, except that it ignores fields beyond the four instead of refusing them with E400.

Contract v1.1 allows both; the harness's tests run this and the reference side by side.
    python run.py lenient_relay {serve|resolve|reprocess|purge} [...]   (as tests/conftest.py's derived_relay makes it)
"""

import json
import sys

from .reference.__main__ import main
from .reference.relay import FIELDS, Relay


class IgnoresExtraFields(Relay):
    """Drops the fields beyond guid/from/to/amount before judging the body."""

    async def transfer(self, raw: bytes) -> tuple[int, str]:
        try:
            body = json.loads(raw)
        except ValueError:
            body = None
        if isinstance(body, dict) and set(body) > FIELDS:
            raw = json.dumps({k: body[k] for k in FIELDS}).encode()
        return await super().transfer(raw)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:], relay_cls=IgnoresExtraFields))
