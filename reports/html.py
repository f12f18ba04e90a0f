"""The HTML report of a run: a page a student or a reviewer can read, made from results.json alone.

    python -m reports.html runs/<run>/results.json      (relaychaos run writes report.html itself)

It shows the relay, the score per rule (held or broken, and where), and for each scenario its
outcome and, when it failed, the incident reports with their timelines.
"""
from __future__ import annotations

import html
import json
import sys
from pathlib import Path

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 70em; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.2em; margin-top: 2em; }
table { border-collapse: collapse; width: 100%; } td, th { padding: .3em .6em; border-bottom: 1px solid #ddd;
text-align: left; vertical-align: top; }
.held { color: #176b2c; font-weight: 600; } .broken { color: #b3261e; font-weight: 600; }
pre { background: #f6f6f6; padding: .8em; overflow-x: auto; font-size: 13px; }
details { margin: .4em 0; } summary { cursor: pointer; }
"""


def _e(text) -> str:
    return html.escape(str(text))


def render(results: dict) -> str:
    """The whole page, from a results.json as reports.results writes it."""
    s = results["summary"]
    verdict = "every rule held" if results["ok"] else "rules were broken"
    out = [f"<!doctype html><meta charset=utf-8><title>relaychaos: {_e(results['relay_name'])}</title>",
           f"<style>{STYLE}</style>",
           f"<h1>relaychaos report: relay <code>{_e(results['relay_name'])}</code> — "
           f"<span class={'held' if results['ok'] else 'broken'}>{verdict}</span></h1>",
           f"<p>Manifest: <code>{_e(results['relay'])}</code>. Scenarios: {s['passed']} passed, {s['failed']} "
           f"failed, {s['error']} could not run, {s['skipped']} skipped.</p>", sandbox_line(results.get("sandbox")),
           partial_line(results),
           "<h2>Rules</h2>",
           "<table><tr><th>rule</th><th>what must hold</th><th>contract</th><th>result</th><th>broken in</th></tr>"]
    for rule, r in results.get("rules", {}).items():
        state = "<span class=held>held</span>" if r["held"] else "<span class=broken>broken</span>"
        out.append(f"<tr><td><code>{_e(rule)}</code></td><td>{_e(r['what'])}</td><td>{_e(r.get('contract', ''))}</td>"
                   f"<td>{state}</td><td>{_e(', '.join(r['broken_in']))}</td></tr>")
    out.append("</table>")
    if results.get("notes"):
        out += ["<h2>Notes on the relay (not verdicts)</h2>", "<ul>"]
        out += [f"<li>{_e(n)}</li>" for n in results["notes"]]
        out.append("</ul>")
    out += ["<h2>Scenarios</h2>", "<table><tr><th>scenario</th><th>outcome</th><th>seconds</th></tr>"]
    for sc in results["scenarios"]:
        name = sc["nodeid"].split("::")[-1]
        cls = "held" if sc["outcome"] == "passed" else "broken"
        detail = ""
        if sc.get("message"):
            detail = f"<details><summary>incident report</summary><pre>{_e(sc['message'])}</pre></details>"
        out.append(f"<tr><td><code>{_e(name)}</code>{detail}</td><td class={cls}>{_e(sc['outcome'])}</td>"
                   f"<td>{sc['duration_s']:.2f}</td></tr>")
    out.append("</table>")
    return "\n".join(out)


def partial_line(results: dict) -> str:
    """A run cut short (Ctrl-C) says so, and how far it got; a whole run, nothing."""
    if not results.get("partial"):
        return ""
    total = f" of {results['expected']}" if results.get("expected") else ""
    return (f"<p class=broken>Partial: the run was interrupted after {len(results['scenarios'])}{total} scenarios; "
            "only those are judged here.</p>")


def sandbox_line(level: dict | None) -> str:
    """The sandbox level the relay ran under, as one paragraph (results written before it had one: unknown)."""
    if not level:
        return "<p class=sandbox>Sandbox: not recorded.</p>"
    if not level.get("enforced"):
        return (f"<p class=sandbox>Sandbox: <b>{_e(level.get('mode'))}</b>, the relay ran unconfined "
                f"({_e('; '.join(level.get('missing', [])))}).</p>")
    limits = ", ".join(f"{k} {v}" for k, v in level.get("rlimits", {}).items())
    ll = level.get("landlock", {})
    parts = [f"uid: {_e(level.get('uid'))}", f"rlimits: {_e(limits)}",
             f"Landlock ABI {ll.get('abi')} ({_e(', '.join(ll.get('rules', [])))})" if ll.get("abi") else "no Landlock"]
    parts += [f"mounts: {_e(', '.join(level['mounts']))}"] if level.get("mounts") else []
    missing = f" Not enforced: {_e('; '.join(level['missing']))}." if level.get("missing") else ""
    return f"<p class=sandbox>Sandbox: <b>{_e(level['mode'])}</b>: {'; '.join(parts)}.{missing}</p>"


def write(results_path: Path) -> Path:
    """Write report.html beside results.json; returns its path."""
    page = render(json.loads(results_path.read_text()))
    target = results_path.with_name("report.html")
    target.write_text(page)
    return target


if __name__ == "__main__":
    print(write(Path(sys.argv[1])))
