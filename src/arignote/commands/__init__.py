"""One module a CLI command (see :mod:`arignote.cli`)."""
