"""arignote.callbacks."""
