"""arignote.parallel."""
