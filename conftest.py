"""Root conftest: the relaychaos plugin itself is registered through the pytest11 entry point.

Only the project's own test folders are collected; the relays under test and the
fixtures are programs that the tests run, not test modules.
"""

# src/ holds only src/relaychaos, a link to harness/ (pyproject.toml, [tool.setuptools.package-dir])
collect_ignore = ["relay_under_test", "fixtures", "harness", "reports", "benchmarks", "tools", "src"]
