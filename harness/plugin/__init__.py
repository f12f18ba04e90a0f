"""The pytest plugin: options, markers, fixtures and report hooks (hooks.py is the entry point pytest loads)."""
