"""Events mean what Jepsen's mean, and op names have one spelling shared by the recorder and the checkers.

`ok`: it happened; `fail`: it certainly did not; `info`: unknown. A batch command that
exits non-zero, is killed or times out may have done part of its work: `info`, never `fail`.
"""

import ast
from pathlib import Path

import pytest

from relaychaos.events import BATCH_COMMANDS, TYPES, Op
from relaychaos.recorder import Recorder

ROOT = Path(__file__).resolve().parent.parent
OPS = {v for k, v in vars(Op).items() if k.isupper()}


@pytest.mark.parametrize(
    "returncode, timed_out, expected", [(0, False, "ok"), (1, False, "info"), (None, True, "info"), (-9, False, "info")]
)
def test_a_batch_command_that_did_not_exit_0_has_an_unknown_effect(returncode, timed_out, expected):
    e = Recorder().batch_ended(1, "resolve", returncode, 0.5, 0.0, timed_out)
    assert e.type == expected and e.type in TYPES and e.f == Op.RESOLVE


def test_the_recorder_writes_every_op_name_through_the_op_constants():
    tree = ast.parse((ROOT / "harness" / "recorder.py").read_text())
    literal = [
        n.lineno
        for n in ast.walk(tree)
        if isinstance(n, ast.Call)
        and isinstance(n.func, ast.Attribute)
        and n.func.attr == "_add"
        and len(n.args) >= 3
        and isinstance(n.args[2], ast.Constant)
    ]
    assert not literal, f"recorder.py lines {literal} name an op by a string literal: use relaychaos.events.Op"


def _compared_to_literal_op(tree: ast.AST) -> list[int]:
    """Lines where an event's op (`e.f`, or `f` bound to it) is compared with a string naming an op."""
    out = []
    for n in ast.walk(tree):
        if not isinstance(n, ast.Compare):
            continue
        left = n.left
        is_op = (isinstance(left, ast.Attribute) and left.attr == "f") or (
            isinstance(left, ast.Name) and left.id == "f"
        )
        values = [
            c
            for comp in n.comparators
            for c in ([comp] if isinstance(comp, ast.Constant) else getattr(comp, "elts", []))
        ]
        if is_op and any(isinstance(c, ast.Constant) and c.value in OPS for c in values):
            out.append(n.lineno)
    return out


@pytest.mark.parametrize("module", sorted(p.name for p in (ROOT / "harness" / "checkers").glob("*.py")))
def test_the_checkers_read_op_names_through_the_op_constants(module):
    lines = _compared_to_literal_op(ast.parse((ROOT / "harness" / "checkers" / module).read_text()))
    assert not lines, f"checkers/{module} lines {lines} compare an op with a string literal: use relaychaos.events.Op"


def test_the_batch_commands_are_ops():
    assert set(BATCH_COMMANDS) <= OPS
