"""Whose a proxy is: its name's tag says which process of which machine made it, and a maker is dead only when this
machine's kernel says so."""

import os

from relaychaos.stack import proxy_owner
from relaychaos.stack.proxy_owner import Owner, dead, owner_of


def test_a_stack_s_prefix_carries_this_process_s_tag_and_reads_back_as_its_owner():
    name = proxy_owner.prefix("happy path/1") + "-account"
    me = proxy_owner.this_process()
    assert name.startswith(me.tag) and name.endswith("-happy_path_1-account")
    assert owner_of(name) == me and not dead(me)


def test_names_without_a_tag_have_no_owner():
    assert owner_of(f"rc{os.getpid()}-1-happy-path-account") is None  # the older names: never removed
    assert owner_of("team-proxy") is None


def test_another_space_is_never_dead_here_and_another_start_time_is_another_process():
    me = proxy_owner.this_process()
    other = "0" * 8 if me.space != "0" * 8 else "1" * 8
    assert not dead(Owner(other, 2**22 + 1, 1)), "another machine's or container's: not ours to judge"
    assert dead(Owner(me.space, me.pid, me.start + 1)), "this pid, used before by another process"
    assert dead(Owner(me.space, 2**22 + 1, 1)), "a pid above pid_max's largest: no process has it"


def test_a_maker_whose_proc_entry_cannot_be_read_is_dead_only_when_no_process_has_its_pid(monkeypatch):
    monkeypatch.setattr(proxy_owner, "started", lambda pid: None)  # as /proc under hidepid shows another user's
    here = proxy_owner.space()
    assert not dead(Owner(here, 1, 5)), "pid 1 is there: taken as alive"
    assert dead(Owner(here, 2**22 + 1, 5))
