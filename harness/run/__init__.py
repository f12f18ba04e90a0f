"""The run: its definition (options, environment, manifest, built once), the stacks put together from it, and
running one scenario on a stack."""
