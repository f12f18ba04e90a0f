"""The reference relay's serve, once: it exits by itself after 3 seconds and refuses to start again.

Run as tests/conftest.py's derived_relay() makes it: a module beside the bundled Python relays.
"""

import os
import sys
import threading

from .reference.__main__ import main

if sys.argv[1] == "serve":
    marker = os.environ["LEDGER_PATH"] + ".served"
    if os.path.exists(marker):
        print("dies_once: this relay serves once; it will not start again", file=sys.stderr)
        sys.exit(3)
    open(marker, "w").close()
    threading.Timer(3.0, os._exit, args=(4,)).start()
sys.exit(main(sys.argv[1:]))
