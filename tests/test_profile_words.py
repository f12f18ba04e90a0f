"""What a person reads is in the relay's profile's words: the course's GUID, E903 and account system for a
course relay; the key, HTTP statuses, PSP and the service's own batch commands for an idempotency-key
service. The history keeps the contract's words, so every rule judges both profiles alike."""

from relaychaos.checkers.verdict import Verdict
from relaychaos.events import Event
from relaychaos.reports.incident import describe_event, render
from relaychaos.reports.results import RunResults
from relaychaos.words import Words, own_commands

KEYED = Words.of("idempotency-key", {"resolve": "payments reconcile", "purge": "payments expire"})


def test_a_course_relay_reads_as_the_contract_speaks():
    course = Words.of(None, None)
    assert course.course and course.key == "GUID" and course.downstream == "account system"
    assert course.answer(504, "E901") == "HTTP 504 code E901"
    said = "the account system received this GUID more than once; resolve ends"
    assert course.say(said) == said


def test_a_keyed_service_reads_in_its_own_words():
    assert (KEYED.key, KEYED.downstream, KEYED.relay, KEYED.in_flight) == ("key", "PSP", "service", "409")
    assert KEYED.answer(504, "E901") == "HTTP 504 (unknown: the payment may or may not have executed)"
    assert KEYED.answer(409, "E903") == "HTTP 409 (the key is in flight: nothing new was done)"
    assert KEYED.downstream_answer("0000") == "executed"
    assert KEYED.command("resolve") == "payments reconcile" and KEYED.command("reprocess") == "reprocess"


def test_a_rule_s_sentence_is_said_in_the_service_s_words_but_ids_and_files_stay():
    said = KEYED.say(
        "the account system received this GUID more than once; a relay may send a GUID at most once "
        "(relay.toml, rule resolve-min-age); resolve ends; the channel got E903, then 0000"
    )
    assert said == (
        "the PSP received this key more than once; a service may send a key at most once "
        "(relay.toml, rule resolve-min-age); payments reconcile ends; the channel got 409, then 2xx"
    )


def test_a_service_s_batch_commands_are_named_by_its_program_and_words_before_the_first_flag():
    commands = {
        "serve": ("./bin/payments", "serve"),
        "resolve": ("./bin/payments", "reconcile", "--older-than"),
        "purge": ("python", "-m", "svc", "expire"),
    }
    assert own_commands("idempotency-key", commands) == {"resolve": "payments reconcile", "purge": "python"}
    assert own_commands("course", commands) == {}
    own = own_commands("idempotency-key", commands, {"resolve": ("--older-than", "{ms}ms"), "purge": ("--retention",)})
    assert own["--min-age"] == "--older-than" and "--retention" not in own


def test_a_rule_names_the_service_s_own_flag():
    words = Words.of("idempotency-key", {"reprocess": "paysvc retry-unsent", "--max-attempts": "--limit-attempts"})
    assert words.say("reprocess stops at --max-attempts") == "paysvc retry-unsent stops at --limit-attempts"


def test_a_timeline_line_says_the_answer_in_the_profile_s_words():
    answered = Event(7, 1.0, "channel-a-0-0", "ok", "transfer", {"status": 409, "code": "E903"})
    assert describe_event(answered) == "channel gets HTTP 409 code E903"
    assert describe_event(answered, KEYED) == "channel gets HTTP 409 (the key is in flight: nothing new was done)"
    ended = Event(9, 2.0, "batch", "ok", "resolve", {"run": 1, "command": "resolve", "returncode": 0})
    assert describe_event(ended, KEYED) == "payments reconcile ends with status 0"


def test_an_incident_report_names_the_key_not_a_guid():
    verdict = Verdict("one-account-call", "k1", "the PSP received this key twice")
    assert render(verdict, [], [], 0.0, words=KEYED).startswith("[one-account-call] key k1")
    assert render(verdict, [], [], 0.0).startswith("[one-account-call] GUID k1")


def test_the_results_rule_table_says_each_rule_in_the_service_s_words_and_keeps_them_on_reload(tmp_path):
    results = RunResults("relay.toml", "payments", words=KEYED)
    rules = results.record().rules
    assert rules["one-account-call"].what == "at most one PSP call per key"
    results.write(tmp_path / "results.json")
    again = RunResults.load(tmp_path / "results.json")
    assert again.words == KEYED and again.record().rules["one-account-call"].what == "at most one PSP call per key"
