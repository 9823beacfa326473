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

from arignote._lazy import lazy_namespace

# public name -> submodule defining it, imported on first use: the fit loop needs only base and
# stopping, not the lease files, TensorBoard or h5py the others bring
_NAMES = {
    "BackupAndRestore": "backup",
    "Callback": "base", "CallbackList": "base", "History": "base", "LazyLogs": "base",
    "BaseLogger": "base_logger",
    "DeviceStatsMonitor": "device_stats",
    "LambdaCallback": "lambda_callback",
    "CSVLogger": "loggers", "TensorBoard": "loggers",
    "LearningRateScheduler": "lr", "ReduceLROnPlateau": "lr",
    "ModelCheckpoint": "model_checkpoint",
    "ProgbarLogger": "progbar",
    "RemoteMonitor": "remote",
    "RunStatus": "status",
    "EarlyStopping": "stopping", "TerminateOnNaN": "stopping",
}
__getattr__, __dir__ = lazy_namespace(
    __name__, {k: f"{__name__}.{v}" for k, v in _NAMES.items()}, globals())

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
