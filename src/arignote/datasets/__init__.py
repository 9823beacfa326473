"""arignote.datasets."""
