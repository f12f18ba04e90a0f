"""The reference relay: every rule of the relay contract, in plain code.

Read it in this order: ledger.py (the GUID-keyed SQLite ledger and its atomic
claims), account.py (calling the account system and classifying the outcome),
serve.py (the channel's API), batch.py (resolve, reprocess, purge).
"""
