# The two commands of the README. Each installs what is missing first.
.PHONY: run test bootstrap bench

# The main job: the chaos suite against the bundled relay, with a report in runs/.
run: bootstrap
	.venv/bin/relaychaos run $(ARGS)

# The project's own tests (harness, fixtures, relays) and the chaos suite.
test: bootstrap
	.venv/bin/python -m pytest -n 2 $(ARGS)

bootstrap:
	@bash scripts/bootstrap.sh
