"""The red team's relays: each is the reference relay plus one attack on the sandbox (see evidence.py).

They are not imported by the tests: tests/test_red_team.py copies each module beside the bundled Python
relays and grades it with `relaychaos grade`, then reads its evidence in the grade's logs.
"""
