"""Where the bundled material lives: the same answers in a checkout and in an installed wheel.

`relaychaos` is one package; in a checkout its subpackages are the repository's top-level
folders (harness/ is `relaychaos` itself), in a wheel they sit under site-packages/relaychaos/.
Nothing here imports the subpackages: their folders are found from their import specs.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent  # harness/ in a checkout


def folder(subpackage: str) -> Path:
    """The folder of `relaychaos.<subpackage>` (e.g. 'scenarios'), without importing it."""
    spec = importlib.util.find_spec(f"relaychaos.{subpackage}")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(f"relaychaos.{subpackage} is not installed; reinstall relaychaos")
    return Path(list(spec.submodule_search_locations)[0]).resolve()


def bundled_relays() -> Path:
    """relay_under_test/: the reference, the other correct relays, base, the mutants."""
    return folder("relay_under_test")


def reference_relay() -> Path:
    """The bundled reference relay's relay.toml: the default relay under test."""
    return bundled_relays() / "reference" / "relay.toml"


def suite() -> Path:
    """scenarios/: the chaos suite that `relaychaos run` runs."""
    return folder("scenarios")
