"""The night cut to its story (relaychaos.incidents.story.around): server faults narrowed to the story's GUIDs, and
each kept resolve or purge keeps the mark its rows are aged from, wherever the mark stands."""

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.incidents import story
from relaychaos.incidents.faults import Planned
from relaychaos.incidents.story import around


def night(*steps):
    return [Planned(step, f"line {n}") for n, step in enumerate(steps, 1)]


def test_a_server_fault_keeps_only_the_story_s_guids_for_its_e500s_and_holds():
    steps = night(
        S.Mark("age-1", wait_s=0.9),  # before anything of the story: kept for the resolve aged from it
        S.Send("g1"),
        S.ServerFault(e500_once=("g1", "g2"), hold_guids=("g1",)),
        S.Send("g2"),
        S.Send("g1"),
        S.Resolve(min_age_s=0.45, since="age-1"),
        S.Send("g2"),
    )
    story = [p.step for p in around(steps, {"g2"})]
    assert story == [
        S.Mark("age-1", wait_s=0.9),
        S.ServerFault(e500_once=("g2",)),
        S.Send("g2"),
        S.Resolve(min_age_s=0.45, since="age-1"),
        S.Send("g2"),
    ], story
    scenario_file.check(story, ("a",))  # a story that can run


def test_a_story_opens_only_the_accounts_its_sends_touch():
    """A night of a million transfers opens a million accounts (a 22 MB story the account system refused); its
    story's handful of sends needs theirs."""
    opened = {f"acct-{n}": 1000 for n in range(10_000)}
    steps = [
        S.Send("g1", 10, src="acct-1", dst="acct-2"),
        S.Race("g2", n=2, src="acct-3", dst="acct-4"),
        S.Send("g3", raw='{"guid": "g3", "from": "acct-5", "to": "acct-6", "amount": 1.5}'),
        S.Kill("a"),
    ]
    assert story.accounts(steps, opened) == {f"acct-{n}": 1000 for n in range(1, 7)}
