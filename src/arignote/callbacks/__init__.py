"""arignote.callbacks: Keras 2's callbacks, on PyTorch.

Everything a Keras 2.3 script imports from ``keras.callbacks`` is here under the same name and
arguments (Callback, BaseLogger, TerminateOnNaN, ProgbarLogger, History, ModelCheckpoint,
EarlyStopping, RemoteMonitor, LearningRateScheduler, ReduceLROnPlateau, CSVLogger,
LambdaCallback, TensorBoard), plus tf.keras's BackupAndRestore and our DeviceStatsMonitor.
Files (checkpoints, backups, CSV, TensorBoard events) are written by rank 0 only; checkpoints
and backups are atomic and checksummed.

Example::

    >>> from arignote.callbacks import EarlyStopping, ModelCheckpoint, CSVLogger
    >>> callbacks = [EarlyStopping(patience=3), ModelCheckpoint("best.h5", save_best_only=True)]
    >>> # model.fit(x, y, validation_split=0.1, callbacks=callbacks)
"""

from arignote.callbacks.backup import BackupAndRestore
from arignote.callbacks.base import Callback, CallbackList, History, LazyLogs
from arignote.callbacks.base_logger import BaseLogger
from arignote.callbacks.device_stats import DeviceStatsMonitor
from arignote.callbacks.lambda_callback import LambdaCallback
from arignote.callbacks.loggers import CSVLogger, TensorBoard
from arignote.callbacks.lr import LearningRateScheduler, ReduceLROnPlateau
from arignote.callbacks.model_checkpoint import ModelCheckpoint
from arignote.callbacks.progbar import ProgbarLogger
from arignote.callbacks.remote import RemoteMonitor
from arignote.callbacks.status import RunStatus
from arignote.callbacks.stopping import EarlyStopping, TerminateOnNaN

__all__ = [
    "BackupAndRestore",
    "BaseLogger",
    "CSVLogger",
    "Callback",
    "CallbackList",
    "DeviceStatsMonitor",
    "EarlyStopping",
    "History",
    "LambdaCallback",
    "LazyLogs",
    "LearningRateScheduler",
    "ModelCheckpoint",
    "ProgbarLogger",
    "ReduceLROnPlateau",
    "RunStatus",
    "RemoteMonitor",
    "TensorBoard",
    "TerminateOnNaN",
]
