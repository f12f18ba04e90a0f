"""The real parts of one test's world: Toxiproxy, relay processes under the supervisor, the account
system, the channel, and `Stack` (world.py), which builds and drives them together."""
