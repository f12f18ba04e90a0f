"""The pytest plugin: options, markers, fixtures and report hooks (hooks.py is the entry point pytest loads).

pytest loads the plugin into every session of an environment where relaychaos is installed,
other projects' too. So its modules import the harness below them (run, stack, sandbox, engine,
reports) inside the hooks and fixtures that use them, at their first use: a session that never
asks for a stack pays for none of it. Each such import says so with `# lazy (relaychaos.plugin)`.
"""
