"""`python relay_under_test/run.py mutants NAME {serve|resolve|reprocess|purge} [...]`: run one mutant."""

import sys

from ..reference.__main__ import main
from .catalogue import MUTANTS

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in MUTANTS:
        sys.exit(f"usage: python relay_under_test/run.py mutants NAME COMMAND ...; NAME is one of {', '.join(MUTANTS)}")
    sys.exit(main(sys.argv[2:], **MUTANTS[sys.argv[1]]))
