"""The soak's live status: one line rewritten in place on a terminal, plain lines every few seconds otherwise.

status = Status(sys.stdout)
status.update(line)      # as often as you like
status.done()            # ends the line on a terminal
"""

from __future__ import annotations

import time
from typing import TextIO

PLAIN_EVERY_S = 5.0


def line(
    elapsed_s: float,
    duration_s: float,
    sent: int,
    rate: float,
    asked: float,
    codes: dict,
    in_flight: int,
    fault: str | None,
    missed: int,
) -> str:
    """`12s/60s sent 6012 (500/s of 500) 0000:5300 E901:120 ... in flight 40 fault: drop-answers`."""
    shown = " ".join(f"{code}:{n}" for code, n in sorted(codes.items()))
    behind = f" MISSED {missed} (the machine cannot keep up)" if missed else ""
    return (
        f"{elapsed_s:5.0f}s/{duration_s:.0f}s sent {sent} ({rate:.0f}/s of {asked:g}){behind} "
        f"answers {shown or '-'} in flight {in_flight} fault: {fault or 'none'}"
    )


class Status:
    """Writes status lines to `out`: in place when it is a terminal, else one plain line every PLAIN_EVERY_S."""

    def __init__(self, out: TextIO):
        self.out = out
        self.tty = out.isatty()
        self._last_plain = 0.0
        self._width = 0

    def update(self, text: str) -> None:
        if self.tty:
            pad = " " * max(0, self._width - len(text))
            self.out.write("\r" + text + pad)
            self._width = len(text)
            self.out.flush()
        elif time.monotonic() - self._last_plain >= PLAIN_EVERY_S:
            self._last_plain = time.monotonic()
            self.out.write(f"relaychaos: soak {text}\n")
            self.out.flush()

    def say(self, text: str) -> None:
        """A line of its own (a warning, an event), not overwritten."""
        if self.tty and self._width:
            self.out.write("\r" + " " * self._width + "\r")
            self._width = 0
        self.out.write(f"relaychaos: {text}\n")
        self.out.flush()

    def done(self) -> None:
        if self.tty and self._width:
            self.out.write("\n")
            self.out.flush()
            self._width = 0
