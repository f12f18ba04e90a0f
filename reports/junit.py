"""junit.xml after a recheck: the test cases whose judgement changed get or lose their <failure> or <skipped>.

pytest writes junit.xml during `relaychaos run`; `relaychaos recheck` edits only the
test cases it re-judged differently (their failure element and the suite's counts), so
everything else pytest wrote (timings, properties) stays as it was.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from relaychaos.atomic import write_text


def case_key(nodeid: str) -> tuple[str, str]:
    """(classname, name) of a pytest node id as pytest's junit writer spells them."""
    parts = nodeid.split("::")
    module = parts[0][:-3] if parts[0].endswith(".py") else parts[0]
    return ".".join([module.replace("/", ".")] + parts[1:-1]), parts[-1]


def update(path: Path, outcomes: dict[str, tuple[str, str | None]]) -> int:
    """Set each node id's outcome ('passed', 'failed' with the failure text, or 'not exercised': a skip saying so)
    in junit.xml; how many changed."""
    tree = ET.parse(path)
    changed = 0
    for suite in tree.getroot().iter("testsuite"):
        for case in suite.findall("testcase"):
            key = (case.get("classname", ""), case.get("name", ""))
            nodeid = next((n for n in outcomes if case_key(n) == key), None)
            if nodeid is None:
                continue
            outcome, text = outcomes[nodeid]
            for old in case.findall("failure") + case.findall("skipped"):
                case.remove(old)
            first = (text or "").splitlines()[0][:200] if text else ""
            if outcome in ("failed", "not exercised"):
                element = ET.SubElement(case, "failure" if outcome == "failed" else "skipped", message=first)
                if outcome != "failed":
                    element.set("type", "pytest.skip")
                element.text = text or ""
            changed += 1
        for tag, count in (("failure", "failures"), ("skipped", "skipped")):
            suite.set(count, str(sum(1 for c in suite.findall("testcase") if c.find(tag) is not None)))
    write_text(path, ET.tostring(tree.getroot(), encoding="unicode", xml_declaration=True))
    return changed
