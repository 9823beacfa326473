"""Keras 2's ``RemoteMonitor``: POST each epoch's logs to an HTTP server (needs ``requests``).

Sent to ``root + path`` after every epoch, by rank 0 only: ``{"epoch": epoch, **logs}`` as JSON,
either in the form field ``field`` (default) or as the request body (``send_as_json=True``).
A server that cannot be reached gives a warning, not a failed training run (as Keras 2).

Example::

    >>> monitor = RemoteMonitor(root="http://localhost:9000")   # doctest: +SKIP
    >>> # model.fit(x, y, callbacks=[monitor])
"""

from __future__ import annotations

import importlib
import json
import warnings
from typing import Any

import numpy as np

from arignote.callbacks import _monitor
from arignote.callbacks.base import Callback

__all__ = ["RemoteMonitor"]


def _requests() -> Any:
    try:
        return importlib.import_module("requests")
    except ImportError:
        raise ImportError("RemoteMonitor requires the `requests` library: pip install requests "
                          "(or pip install 'arignote[remote]')") from None


class RemoteMonitor(Callback):
    """Stream epoch logs to ``root + path`` (Keras 2 arguments and payload)."""

    def __init__(self, root: str = "http://localhost:9000", path: str = "/publish/epoch/end/",
                 field: str = "data", headers: dict[str, str] | None = None, send_as_json: bool = False,
                 timeout: float = 10.0) -> None:
        super().__init__()
        self._http = _requests()  # fail at construction, not after the first epoch
        self.root, self.path, self.field = root, path, field
        self.headers, self.send_as_json, self.timeout = headers, send_as_json, timeout

    def payload(self, epoch: int, logs: Any) -> dict[str, Any]:
        """What is sent for an epoch: ``epoch`` and every log value as a plain number."""
        send: dict[str, Any] = {"epoch": epoch}
        for key, value in dict(logs or {}).items():
            send[key] = value.item() if isinstance(value, (np.ndarray, np.generic)) else value
        return send

    def on_epoch_end(self, epoch, logs=None) -> None:
        if not _monitor.is_main(self.model):
            return
        send = self.payload(epoch, logs)
        url = self.root + self.path
        try:
            if self.send_as_json:
                self._http.post(url, json=send, headers=self.headers, timeout=self.timeout)
            else:
                self._http.post(url, {self.field: json.dumps(send)}, headers=self.headers,
                                timeout=self.timeout)
        except self._http.exceptions.RequestException as exc:
            warnings.warn(f"RemoteMonitor could not reach {url} ({type(exc).__name__}); epoch {epoch} "
                          "was not sent", RuntimeWarning, stacklevel=2)
