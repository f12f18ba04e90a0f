"""The harness's own errors: each says what was wrong, where it came from, and the fix.

A HarnessError means the harness could not run (exit status 2 of the CLI), as
opposed to a verdict, which means the relay under test broke a rule.
"""

from __future__ import annotations


class HarnessError(Exception):
    """Something stopped the harness from running; the message is for a person."""

    def __init__(self, what: str, *, where: str | None = None, fix: str | None = None, details: str | None = None):
        self.what, self.where, self.fix, self.details = what, where, fix, details
        super().__init__(self.render())

    def render(self) -> str:
        lines = [self.what if not self.where else f"{self.where}: {self.what}"]
        if self.fix:
            lines.append(f"fix: {self.fix}")
        if self.details:
            lines.append(self.details.rstrip())
        return "\n".join(lines)


class ManifestError(HarnessError):
    """A relay.toml that cannot be used as it is."""


class ToxiproxyError(HarnessError):
    """No Toxiproxy server could be found or started, or it refused a request."""


class ToxiproxyConflict(ToxiproxyError):
    """Toxiproxy refused a request on a proxy or toxic that is not as the harness left it (deleted, or a name
    taken): someone else changed it, which the stack's audit reports as tampering."""


class RelayError(HarnessError):
    """A relay process that would not start, answer, or run its batch command."""


class FixtureError(HarnessError):
    """The account-system fixture would not start or answer its control API."""


class SandboxError(HarnessError):
    """The sandbox asked for (--sandbox strict, or a limit) cannot be had on this machine."""
