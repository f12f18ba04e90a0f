"""Checks across a bundle's logs: what one log says that another contradicts, each named by file and line.

    across(bundle)        # BundleError on the first contradiction; warnings appended to bundle.notes

Errors (a scenario built on them would be a different night): a GUID the account system
received that the channel never sent (said when it differs only in case from one it sent);
an account call whose amount or parties differ from the channel's request for that GUID;
a channel `0000` for a GUID the account system has no call for. Warnings: GUIDs of one log
that differ only in case (the relay treats them as two GUIDs, and so does the import).
One pass over each log.
"""
from __future__ import annotations

from relaychaos.incidents.mapping import BundleError


def across(bundle) -> None:
    """Every check of the module doc, in one pass over each log."""
    first: dict = {}
    folded: dict[str, object] = {}
    for r in bundle.channel:
        if r.guid not in first:
            first[r.guid] = r
            key = r.guid.lower()
            other = folded.setdefault(key, r)
            if other is not r:
                bundle.notes.append(f"{bundle.folder / r.file}, line {r.line}: GUID {r.guid} differs only in case from "
                                    f"{other.guid} ({other.where}): they are taken as two GUIDs, as a relay takes them; "
                                    "if one system changed the case, set guid_case = \"lower\" for that log in "
                                    "incident.toml")
    called: set[str] = set()
    for c in bundle.account:
        send = first.get(c.guid)
        where = f"{bundle.folder / c.file}, line {c.line}"
        if send is None:
            _never_sent(c, where, folded)
        if (c.amount, c.src, c.dst) != (send.amount, send.src, send.dst):
            raise BundleError(f"GUID {c.guid}: the account system received {c.amount} {c.src}→{c.dst}, the channel "
                              f"sent {send.amount} {send.src}→{send.dst} ({send.where})", where=where,
                              fix="the logs disagree on the transfer: check both lines (a unit? a GUID reused?) and "
                                  "correct the one that is wrong")
        called.add(c.guid)
    for r in bundle.channel:
        if r.result == "0000" and r.guid not in called:
            raise BundleError(f"the relay answered 0000 for GUID {r.guid}, but the account log has no call for it",
                              where=f"{bundle.folder / r.file}, line {r.line}",
                              fix="the account log is incomplete (add the call), or this line's GUID or result is "
                                  "wrong")


def _never_sent(c, where: str, folded: dict) -> None:
    other = folded.get(c.guid.lower())
    if other is not None:
        raise BundleError(f"GUID {c.guid} is not in the channel log, but {other.guid} ({other.where}) differs from it "
                          "only in case", where=where,
                          fix="one system changed the GUID's case: set guid_case = \"lower\" (or \"upper\") in "
                              "[logs.account] and [logs.channel] of incident.toml")
    raise BundleError(f"GUID {c.guid} is in the account log but the channel log never sent it", where=where,
                      fix="add the channel's request for it to the channel log, or drop the line if another client "
                          "sent it (a relay that minted a new GUID, rule guid-preserved, cannot be imported: write "
                          "that scenario by hand, see scenarios/regressions/recovery-minted-new-guid.yaml)")
