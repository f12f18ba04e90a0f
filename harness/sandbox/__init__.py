"""The sandbox every relay command runs in: its own uid, rlimits, a private view of the files, Landlock.

The harness side (`policy.Sandbox`) decides what a relay may do and writes it as a
`plan.Plan`; the exec wrapper (`python -m relaychaos.sandbox PLAN -- ARGV`) applies
the plan to itself and then `execve`s the relay, so nothing runs between fork and
exec in the threaded harness. This package's own modules import nothing heavy: the
wrapper's start-up is part of every relay start.
"""
