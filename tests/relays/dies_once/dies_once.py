"""The reference relay's serve, once: it exits by itself after DIES_AFTER_S seconds and refuses to start again."""
import os
import sys
import threading

from relaychaos.relay_under_test.reference.__main__ import main

if sys.argv[1] == "serve":
    marker = os.environ["LEDGER_PATH"] + ".served"
    if os.path.exists(marker):
        print("dies_once: this relay serves once; it will not start again", file=sys.stderr)
        sys.exit(3)
    open(marker, "w").close()
    threading.Timer(float(os.environ.get("DIES_AFTER_S", "3")), os._exit, args=(4,)).start()
sys.exit(main(sys.argv[1:]))
