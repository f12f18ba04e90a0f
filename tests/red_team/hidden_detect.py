"""Red team, class 16: telling a hidden scenario from a visible one, and behaving well only there.

What a relay can observe: its environment, its paths and mounts (LEDGER_PATH, HOME, its cgroup), and the
requests themselves. The visible suite is public: every GUID label its scenarios use is known. Were a GUID
`<label>-<run tag>`, a request whose label is none of them would come from a scenario the student was not
shown, and a relay could switch on that (behave only where it believes the scenario is hidden). A GUID that
carries no label (an opaque digest) tells nothing.
"""

import json
import os
import re
import sys

from .evidence import CONTRACT_ENV, Attack, Refused, is_serve, whoami
from .reference.__main__ import main
from .reference.relay import Relay

NAME = "hidden_detect"
ATTEMPTS = ("environment", "paths", "guid-labels")
A = Attack(NAME)
VISIBLE_LABELS = {
    "d1",
    "fresh",
    "old",
    "p1",
    "r1",
    "r2",
    "r3",
    "t1",
    "t2",
    "u1",
    "x1",
    *(f"f{i}" for i in range(8)),
    *(f"g{i}" for i in range(1, 4)),
    *(f"m{i}" for i in range(10)),
}
WORDS = ("hidden", "after_due", "scenario", "test_", "seed")  # not "visible": hidepid=invisible


def own_free(text: str) -> str:
    for own in {NAME, os.path.basename(os.getcwd())}:
        text = text.replace(own, "<own>")
    return text.lower()


def environment():
    extra = sorted(set(os.environ) - CONTRACT_ENV)
    telling = [k for k, v in os.environ.items() if any(w in own_free(v) for w in WORDS)]
    if extra or telling:
        return f"the environment names the set: extra {extra}, telling {telling}"
    raise Refused(f"the contract's variables only ({len(os.environ)})")


def paths():
    text = own_free(
        " ".join(
            [
                os.environ.get("LEDGER_PATH", ""),
                os.environ.get("HOME", ""),
                os.getcwd(),
                open("/proc/self/mountinfo").read(),
                open("/proc/self/cgroup").read(),
            ]
        )
    )
    hits = [w for w in WORDS if w in text]
    if hits:
        return f"its paths and mounts say {hits}"
    raise Refused("LEDGER_PATH, HOME, its mounts and cgroups name no set or scenario")


class SetAware(Relay):
    """The reference, watching the first GUID's label to tell which set it is graded in."""

    told = False

    async def transfer(self, raw: bytes):
        if not SetAware.told:
            try:
                guid = str(json.loads(raw).get("guid", ""))
            except (ValueError, AttributeError):
                guid = ""
            if "-" in guid:
                SetAware.told = True
                label = guid.rsplit("-", 1)[0]
                A.run("guid-labels", self.judge, label)
        return await super().transfer(raw)

    @staticmethod
    def judge(label: str):
        if re.fullmatch(r"[0-9a-f]{12}", label):
            raise Refused(f"the first GUID's label {label!r} is an opaque digest: it names no scenario")
        where = "visible" if label in VISIBLE_LABELS else "hidden (or after the due date)"
        return f"the first GUID's label {label!r} says the scenario is {where}: the relay can switch on it"


if __name__ == "__main__":
    whoami(NAME, sys.argv[1])
    if is_serve(sys.argv[1:]):
        A.run("environment", environment)
        A.run("paths", paths)
    sys.exit(main(sys.argv[1:], relay_cls=SetAware))
