"""The chaos suite: scenarios run against the relay under test (`pytest scenarios --relay relay.toml`)."""
