"""``arignote dash``: a live, read-only web page for a shared GPU server.

GPUs (memory, utilization, temperature, processes and their users, from NVML), the GPU leases and
the ``arignote run --wait`` queue with waiting times, one card per training run (progress, ETA,
loss and metric curves per epoch, from the status records every ``fit`` keeps) and the runs that
ended in the last hours. One process (the standard library's HTTP server in a thread), no CDN
(the page, its script and style are served from this package), no torch import.

Example::

    $ arignote dash                          # http://127.0.0.1:8470/
    $ arignote dash --host 0.0.0.0           # reachable from other machines: prints a URL with a token
    $ arignote dash --inventory snap.json    # replay a saved `arignote smi --json` snapshot
"""

from arignote.dash.server import DashServer, is_loopback, make_server
from arignote.dash.state import collect

__all__ = ["collect", "make_server", "is_loopback", "DashServer"]
