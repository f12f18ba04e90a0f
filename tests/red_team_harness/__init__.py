"""The harness's own side, attacked: relays that go after what the harness reads from a relay and serves to it.

Each attack module here is the reference relay (or, where the attack is the HTTP itself, a server of its own) plus
one attack. They are not imported by the tests: tests/test_red_team_harness.py copies each beside the bundled
Python relays (`python run.py <attack> COMMAND`, as tests/conftest.py's derived_relay makes it), chooses the
attack's variant with `[env] ATTACK`, runs it with the reference's same run beside it, and holds the harness to a
named verdict, or to the attack achieving nothing, within the reference's time (1.5x) and memory (+50 MiB).
`measure.py` is the tests' side: peak memory and time of one run.
"""
