"""The `relaychaos` command line: each command's entry point (cli.py dispatches)."""
