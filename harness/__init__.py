"""relaychaos: a chaos harness that proves a payment relay debits exactly once per GUID."""


def version() -> str:
    """The installed distribution's version (pyproject.toml's, as pip installed it)."""
    import importlib.metadata  # lazy: every process imports the package; few ask its version

    try:
        return importlib.metadata.version("relaychaos")
    except importlib.metadata.PackageNotFoundError:
        return "(version unknown: relaychaos is not installed; `pip install -e .` in the project, or install the wheel)"
