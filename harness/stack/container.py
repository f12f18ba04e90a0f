"""`[container]` of relay.toml: a service run from its container image rather than from a command in a folder.

    [container]
    image   = "relaychaos/payments-go:local"   # a local image (the harness pulls nothing)
    port    = 8080                              # the port the service listens on inside, on loopback or all
    command = ["/payments", "serve"]            # optional: an argv in the image, for its ENTRYPOINT and CMD

What the service is given comes from the rest of the manifest: `[api.env]` names its variables (port,
downstream_url, downstream_timeout_ms, ledger_url), `[api] health` its health path, `[limits]
ready_timeout_s` how long it may take to answer it. A manifest with `[container]` needs no `[commands]
serve`; a batch command it names (resolve, reprocess, purge) is an argv in the image too, run as a
container of it. relaychaos.stack.container_supervisor runs it.
"""

from __future__ import annotations

from dataclasses import dataclass

KEYS = ("image", "port", "command")


@dataclass(frozen=True)
class Container:
    """A checked [container] table: the image, the port its service listens on inside, its argv in the image
    (empty: the image's own ENTRYPOINT and CMD)."""

    image: str
    port: int
    command: tuple[str, ...] = ()

    @property
    def serve_argv(self) -> tuple[str, ...]:
        """What `serve` is, as a run records it: the image and the command it is given."""
        return ("docker", "run", self.image, *self.command)


def check(raw: object, problems: list[str], warnings: list[str]) -> Container | None:
    """The [container] table of a manifest (None when there is none); every problem found is appended to
    `problems`, every unknown key to `warnings`."""
    if raw is None:
        return None
    if not isinstance(raw, dict):
        problems.append('[container] must be a table: image = "name:tag", port = 8080')
        return None
    image = raw.get("image")
    if not isinstance(image, str) or not image.strip() or any(c.isspace() for c in image):
        problems.append(f'[container].image must name a local image, e.g. "my-service:local", got {image!r}')
    port = raw.get("port")
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        problems.append(
            f"[container].port must be the TCP port the service listens on inside its container (1-65535), got {port!r}"
        )
    command = raw.get("command", [])
    if not (isinstance(command, list) and all(isinstance(a, str) and a for a in command)):
        problems.append(f"[container].command must be a list of strings (an argv), got {command!r}")
        command = []
    warnings += [f"unknown key `{k}` in [container] ignored (known: {', '.join(KEYS)})" for k in raw if k not in KEYS]
    if not isinstance(image, str) or not isinstance(port, int):
        return None
    return Container(image.strip(), port, tuple(command))
