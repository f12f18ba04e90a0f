# The README's commands. Each installs what is missing first.
.PHONY: run test check lint bootstrap

# The main job: the chaos suite against the bundled relay, with a report in runs/.
run: bootstrap
	.venv/bin/relaychaos run $(ARGS)

# Everything: the project's own tests (harness, fixtures, relays) and the chaos suite.
test: bootstrap
	.venv/bin/python -m pytest -n 2 $(ARGS)

# The fast tier: lint, then every test that starts no process and takes no seconds
# (tests/tiers.py fails a test that starts a process unmarked, so this tier never does).
check: lint
	.venv/bin/python -m pytest -q -p no:xdist -m "not stack and not process and not slow" $(ARGS)

# ruff (lint and format) and mypy over the package as Python imports it (scripts/typecheck.py).
lint: bootstrap
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python scripts/typecheck.py

bootstrap:
	@bash scripts/bootstrap.sh
