# The README's commands. Each installs what is missing first: the targets that start processes
# (run, test) the whole of scripts/bootstrap.sh (OS packages as root, Toxiproxy, the Go, Java, Rust and
# Node relays), lint and check only the Python side (.venv, the project in it), a second when it is there.
.PHONY: run test check lint bootstrap venv

# The main job: the chaos suite against the bundled relay, with a report in runs/.
run: bootstrap
	.venv/bin/relaychaos run $(ARGS)

# Everything: the project's own tests (harness, fixtures, relays) and the chaos suite. Four workers on two cores:
# most tests wait (holds, time-outs, relays starting), about 40% of two cores' CPU with two workers. A module whose
# module-scoped fixture is costly (the red team's batch, the wheel) marks itself xdist_group, so it runs on one worker.
test: bootstrap
	.venv/bin/python -m pytest -n 4 --dist loadgroup $(ARGS)

# The fast tier: lint, then every test that starts no process and takes no seconds
# (tests/tiers.py fails a test that starts a process unmarked, so this tier never does).
# Bytecode and pytest's rewritten test modules are cached in build/pycache, never beside the sources, even where
# PYTHONDONTWRITEBYTECODE is set (as on some CI runners): without a cache every run compiles ~1000 modules again,
# a third of this tier's time.
check: lint
	PYTHONDONTWRITEBYTECODE= PYTHONPYCACHEPREFIX="$(CURDIR)/build/pycache" \
	  .venv/bin/python -m pytest -q -p no:xdist -m "not stack and not process and not slow" $(ARGS)

# ruff (lint and format) and mypy over the package as Python imports it (scripts/typecheck.py).
lint: venv
	.venv/bin/ruff check .
	.venv/bin/ruff format --check .
	.venv/bin/python scripts/typecheck.py

bootstrap:
	@bash scripts/bootstrap.sh

venv:
	@bash scripts/bootstrap.sh --python-only
