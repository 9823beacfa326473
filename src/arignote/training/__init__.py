"""arignote.training."""
