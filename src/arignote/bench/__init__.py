"""arignote.bench."""
