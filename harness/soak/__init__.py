"""`relaychaos soak`: an open-loop generator and a seeded nemesis schedule for minutes of traffic."""
