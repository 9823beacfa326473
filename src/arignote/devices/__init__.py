"""arignote.devices."""
