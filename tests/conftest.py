"""Shared pieces of the project's own tests: the bundled relays and small manifests made on the spot."""
from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BASE = ROOT / "relay_under_test" / "base" / "relay.toml"
REFERENCE = ROOT / "relay_under_test" / "reference" / "relay.toml"


@pytest.fixture
def write_manifest(tmp_path: Path):
    """write_manifest(serve=[...], ready_timeout_s=..., **other commands) -> path of a relay.toml."""
    def write(serve: list[str], *, ready_timeout_s: float = 10, name: str = "test-relay", **commands) -> Path:
        folder = tmp_path / name
        folder.mkdir(exist_ok=True)
        cmds = {"serve": serve, "resolve": ["true"], "reprocess": ["true"], "purge": ["true"], **commands}
        body = "\n".join(f"{k} = {json.dumps(list(v))}" for k, v in cmds.items())  # JSON arrays are TOML
        (folder / "relay.toml").write_text(textwrap.dedent(f'name = "{name}"\n[commands]\n{body}\n'
                                                           f"[limits]\nready_timeout_s = {ready_timeout_s}\n"))
        return folder / "relay.toml"
    return write
