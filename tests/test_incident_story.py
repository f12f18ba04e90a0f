"""The night cut to its story (relaychaos.incidents.story.around): server faults narrowed to the story's GUIDs, and
each kept resolve or purge keeps the mark its rows are aged from, wherever the mark stands."""

from relaychaos.engine import scenario_file
from relaychaos.engine import steps as S
from relaychaos.incidents import story
from relaychaos.incidents.faults import Planned
from relaychaos.incidents.shrink import ddmin
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


def test_the_shrinker_replays_no_candidate_that_cannot_give_production_s_answers():
    """Production's channel got two answers for g1 and one for g2: a candidate keeping one send of g1 (or a send of g2
    besides a race of it) cannot reproduce faithfully, so it is refused without a replay; a send of up to three
    attempts may give two answers."""
    gives = story.gives_answers({"g1": ["timeout", "0000"], "g2": "0000"})
    assert gives(night(S.Send("g1", background=True), S.Kill(), S.Start(), S.Send("g1"), S.Send("g2")))
    assert not gives(night(S.Send("g1"), S.Send("g2")))
    assert not gives(night(S.Send("g1"), S.Send("g1"), S.Send("g2"), S.Race("g2", n=2)))
    assert gives(night(S.Send("g1", attempts=3), S.Race("g2", n=1)))


def test_ddmin_counts_the_candidates_it_refused_and_never_replays_them():
    steps = night(S.Send("g1"), S.Kill(), S.Start(), S.Send("g1"))
    replayed = []

    def reproduces(candidate):
        replayed.append([p.step for p in candidate])
        return True

    small, tried = ddmin(steps, reproduces, ("a",), admits=story.gives_answers({"g1": ["timeout", "0000"]}))
    assert [p.step for p in small] == [S.Send("g1"), S.Send("g1")]
    assert all(sum(isinstance(s, S.Send) for s in c) == 2 for c in replayed), replayed
    assert tried.refused > 0 and tried.runs == len(replayed)
