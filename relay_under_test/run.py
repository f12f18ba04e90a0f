"""Run a bundled Python relay from this folder: `python run.py reference serve`, `python run.py mutants NAME
serve`.

The Python relays of this folder share code (every mutant is the reference with one bug), so
each manifest names this folder as its `root`: the commands run here, a sandbox copies it whole,
and nothing of the harness is needed. The folder is imported as the package `relay_under_test`, whatever its
name on disk, and the relay's module runs as `__main__` with the remaining arguments.
"""

import importlib.util
import os
import runpy
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = "relay_under_test"

if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit("usage: python run.py RELAY_MODULE ARGS... (e.g. reference serve, mutants no_e904 serve)")
    spec = importlib.util.spec_from_file_location(
        PACKAGE, os.path.join(HERE, "__init__.py"), submodule_search_locations=[HERE]
    )
    if spec is None or spec.loader is None:
        sys.exit(f"cannot import {os.path.join(HERE, '__init__.py')} as the package {PACKAGE}")
    sys.modules[PACKAGE] = package = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(package)
    module, sys.argv = sys.argv[1], [f"relay {sys.argv[1]}", *sys.argv[2:]]
    runpy.run_module(f"{PACKAGE}.{module}", run_name="__main__", alter_sys=True)
