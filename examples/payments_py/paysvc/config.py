"""Configuration from the environment, and the build variant chosen on the command line."""

from __future__ import annotations

import os
from dataclasses import dataclass

ENV_PORT = "PAYSVC_LISTEN_PORT"
ENV_PSP_URL = "PAYSVC_PSP_BASE_URL"
ENV_PSP_TIMEOUT_MS = "PAYSVC_PSP_TIMEOUT_MS"
ENV_DSN = "PAYSVC_DATABASE_DSN"

# Set once by the CLI (--variant); "" is the production build.
VARIANT = ""


class ConfigError(Exception):
    pass


@dataclass(frozen=True)
class Settings:
    port: int
    psp_base_url: str
    psp_timeout_s: float
    dsn: str


def _need(name: str) -> str:
    value = os.environ.get(name, "").strip()
    if not value:
        raise ConfigError(f"environment variable {name} is not set")
    return value


def load(need_port: bool = True) -> Settings:
    port = int(_need(ENV_PORT)) if need_port else 0
    timeout_ms = int(os.environ.get(ENV_PSP_TIMEOUT_MS, "2000") or "2000")
    if timeout_ms <= 0:
        raise ConfigError(f"{ENV_PSP_TIMEOUT_MS} must be a positive number of milliseconds")
    return Settings(
        port=port,
        psp_base_url=_need(ENV_PSP_URL).rstrip("/"),
        psp_timeout_s=timeout_ms / 1000.0,
        dsn=_need(ENV_DSN),
    )
