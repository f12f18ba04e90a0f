import os
from dataclasses import dataclass
from urllib.parse import urlsplit


@dataclass(frozen=True)
class Config:
    host: str
    port: int
    account_host: str
    account_port: int
    account_prefix: str
    ledger_path: str
    timeout_s: float

    @classmethod
    def from_env(cls) -> "Config":
        u = urlsplit(os.environ["ACCOUNT_URL"])
        return cls(
            host=os.environ.get("RELAY_HOST", "127.0.0.1"),
            port=int(os.environ.get("RELAY_PORT", "0")),
            account_host=u.hostname or "127.0.0.1",
            account_port=u.port or 80,
            account_prefix=u.path.rstrip("/"),
            ledger_path=os.environ["LEDGER_PATH"],
            timeout_s=float(os.environ.get("ACCOUNT_TIMEOUT_MS", "2000")) / 1000.0,
        )
