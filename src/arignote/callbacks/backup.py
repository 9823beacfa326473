"""BackupAndRestore: a run killed at any moment (``kill -9``, a lost node) resumes where it stopped.

At each epoch end rank 0 saves ``model.training_state()`` (weights, optimizer, grad scaler) plus
the epoch counter and the random-number states, atomically and checksummed
(:mod:`arignote.checkpoint`), as ``backup-epoch-000005.ckpt`` in ``backup_dir``; the previous good
copy is kept until the new one is complete. ``on_train_begin`` loads the newest backup that
verifies (falling back to the previous one, with a notice, when the newest is corrupt), restores
it on every rank and sets ``model.resume_epoch`` so ``fit`` continues with the first unfinished
epoch. When training finishes normally the backups are deleted.

A stopped epoch is not a finished epoch: an epoch that ended early (``stop_training`` during its
batches, e.g. by TerminateOnNaN) or left non-finite weights is never backed up, and its backups are
kept at the end of training, so a rerun resumes from the last good epoch instead of from NaN
weights. A failed save (disk full, quota, ...) raises :class:`arignote.checkpoint.CheckpointSaveError`
naming the file, the cause and the last good backup, which is intact.

Example::

    >>> import tempfile
    >>> cb = BackupAndRestore(tempfile.mkdtemp())
    >>> cb.path_for(5).endswith("backup-epoch-000005.ckpt")
    True
"""

from __future__ import annotations

import contextlib
import io
import os
import random
import re
from typing import Any

import numpy as np
import torch

from arignote import checkpoint
from arignote.callbacks import _guard, _monitor
from arignote.callbacks.base import Callback
from arignote.devices import cuda

__all__ = ["BackupAndRestore"]

_NAME = re.compile(r"^backup-epoch-(\d{6,})\.ckpt$")


class BackupAndRestore(Callback):
    """Back up the training state at each epoch end and resume from it after a crash.

    ``backup_dir``: where backups live (created; one directory per training job).
    ``save_freq``: only ``'epoch'`` (a backup after every finished epoch).
    ``delete_checkpoint``: delete the backups when training finishes normally (default True).
    ``keep``: how many good copies to keep (>= 2, so a corrupt newest one has a fallback).
    ``restore_rng``: also restore torch/numpy/random generator states, so a resumed run draws the
    same dropout masks and shuffles as an uninterrupted one.
    """

    def __init__(self, backup_dir: str | os.PathLike[str], save_freq: str = "epoch",
                 delete_checkpoint: bool = True, keep: int = 2, restore_rng: bool = True) -> None:
        super().__init__()
        if save_freq != "epoch":
            raise ValueError(f"BackupAndRestore: save_freq={save_freq!r} is not supported; use 'epoch' "
                             "(a backup after every finished epoch)")
        _monitor.whole_number(keep, "keep", "BackupAndRestore", 2, "the newest copy and a fallback")
        self.backup_dir = os.fspath(backup_dir)
        self.save_freq = save_freq
        self.delete_checkpoint = delete_checkpoint
        self.keep = keep
        self.restore_rng = restore_rng
        self.restored_epoch: int | None = None  # epochs finished by the run we resumed, if any
        self.restored_from: str | None = None
        self._not_saved: str | None = None  # why the last epoch end wrote no backup

    def path_for(self, epochs_done: int) -> str:
        """The backup file written after ``epochs_done`` finished epochs."""
        return os.path.join(self.backup_dir, f"backup-epoch-{epochs_done:06d}.ckpt")

    def backups(self) -> list[tuple[int, str]]:
        """``(epochs_done, path)`` of every backup file present, newest first."""
        if not os.path.isdir(self.backup_dir):
            return []
        found = []
        for name in os.listdir(self.backup_dir):
            match = _NAME.match(name)
            if match:
                found.append((int(match.group(1)), os.path.join(self.backup_dir, name)))
        return sorted(found, reverse=True)

    # ------------------------------------------------------------------ restore

    def on_train_begin(self, logs=None) -> None:
        self.restored_epoch = None
        self.restored_from = None
        self._not_saved = None
        main = _monitor.is_main(self.model)  # every rank restores; rank 0 alone says so
        if main:
            if os.path.exists(self.backup_dir) and not os.path.isdir(self.backup_dir):
                raise checkpoint.CheckpointError(
                    f"BackupAndRestore: backup_dir {self.backup_dir} is a file, not a directory; "
                    "pass another backup_dir or remove that file")
            os.makedirs(self.backup_dir, exist_ok=True)
            self._remove_partial_writes()
        found = self.backups()
        for epochs_done, path in found:
            if os.path.isdir(path):  # found now, not when the save of that epoch fails hours later
                raise checkpoint.CheckpointError(
                    f"BackupAndRestore: {path} is a directory; that name is where the backup of epoch "
                    f"{epochs_done} goes: remove or rename the directory")
        if not found:
            return
        problems = []
        for epochs_done, path in found:
            try:
                saved = checkpoint.load(path)
                self._restore(saved, path)
            except checkpoint.CheckpointError as exc:
                problems.append(str(exc))
                if main:
                    _monitor.notice(f"BackupAndRestore: skipping backup {path}: {exc}")
                continue
            if problems and main:
                _monitor.notice(f"BackupAndRestore: resumed from the previous good backup {path} "
                                f"({epochs_done} epochs done)")
            return
        raise checkpoint.CheckpointError(
            f"BackupAndRestore: every backup in {self.backup_dir} is unusable ({'; '.join(problems)}); "
            f"delete {self.backup_dir} to start training from scratch"
        )

    def _restore(self, saved: Any, path: str) -> None:
        """Load one backup into the model; every way it can be unusable is a CheckpointError."""
        if not isinstance(saved, dict) or "training_state" not in saved or "epochs_done" not in saved:
            raise checkpoint.CheckpointError(
                f"BackupAndRestore: {path} is a checkpoint but not a backup written by BackupAndRestore; "
                f"delete {self.backup_dir} to start from scratch")
        epochs_done = saved["epochs_done"]
        if isinstance(epochs_done, bool) or not isinstance(epochs_done, int) or epochs_done < 0:
            raise checkpoint.CheckpointError(
                f"BackupAndRestore: {path} records epochs_done={epochs_done!r}, not a whole number >= 0")
        try:
            self.model.load_training_state(saved["training_state"])
        except (RuntimeError, KeyError, ValueError, TypeError, AttributeError, IndexError) as exc:
            first = str(exc).splitlines()[0] if str(exc) else ""
            raise checkpoint.CheckpointError(
                f"BackupAndRestore: backup {path} does not fit this model/optimizer ({type(exc).__name__}: "
                f"{first}); it belongs to another training job: use another backup_dir or delete "
                f"{self.backup_dir}"
            ) from None
        bad = _guard.nonfinite_weights(self.model)
        if bad:  # written by an older arignote, or by hand: never a resume point
            raise checkpoint.CheckpointError(
                f"BackupAndRestore: backup {path} holds non-finite weights (NaN/Inf in "
                f"{_guard.describe_nonfinite(bad)})")
        if self.restore_rng and saved.get("rng"):
            self._restore_rng(saved)
        self.restored_epoch = epochs_done
        self.restored_from = path
        self.model.resume_epoch = self.restored_epoch
        if self.params.get("verbose", 1) and _monitor.is_main(self.model):
            _monitor.notice(f"BackupAndRestore: resuming after epoch {self.restored_epoch} from {path}")

    def _restore_rng(self, saved: dict) -> None:
        """Each rank gets its own generators back (``rng_ranks``, saved under data parallel); a
        backup of another world size (or of one process) gives rank 0 the saved state and leaves
        the other ranks' generators as they are, with a notice."""
        strategy = _strategy(self.model)
        rank, world = getattr(strategy, "rank", 0), getattr(strategy, "world_size", 1)
        per_rank = saved.get("rng_ranks")
        if per_rank is not None and len(per_rank) == world:
            _set_rng_state(_from_bytes(per_rank[rank]))
            return
        if rank == 0:
            _set_rng_state(saved["rng"])
        if world > 1 and rank == 0:
            _monitor.notice(f"BackupAndRestore: the backup holds the random generators of "
                            f"{len(per_rank) if per_rank is not None else 1} process(es), this job has "
                            f"{world}: rank 0 gets the saved ones, the other ranks keep theirs")

    # ------------------------------------------------------------------ backup

    def on_epoch_end(self, epoch, logs=None) -> None:
        # under data parallel every rank's generators are saved (each rank draws its own numbers:
        # dropout masks, augmentation), gathered to rank 0 by the strategy: every rank takes part
        per_rank = _rank_rng_states(_strategy(self.model)) if self.restore_rng else None
        if not _monitor.is_main(self.model):
            return
        epochs_done = epoch + 1
        # A stopped epoch is not a finished epoch, and NaN weights are no resume point: the newest
        # backup stays the last good one, and is kept when training ends.
        if _guard.epoch_interrupted(self.model):
            self._not_saved = f"epoch {epochs_done} was interrupted before its end"
        else:
            bad = _guard.nonfinite_weights(self.model)
            self._not_saved = (f"the weights after epoch {epochs_done} are not finite (NaN/Inf in "
                               f"{_guard.describe_nonfinite(bad)})") if bad else None
        if self._not_saved is not None:
            last = self.backups()
            kept = (f"the last good backup {last[0][1]} ({last[0][0]} epochs done) is kept"
                    if last else "no backup was written yet, a rerun starts from scratch")
            _monitor.notice(f"BackupAndRestore: not backing up: {self._not_saved}; {kept}")
            return
        saved = {
            "format": "arignote-backup/1",
            "epochs_done": epochs_done,
            "training_state": self.model.training_state(),
            "rng": _get_rng_state(),
        }
        if per_rank is not None:
            saved["rng_ranks"] = per_rank
        try:
            checkpoint.save(self.path_for(epochs_done), saved)
        except checkpoint.CheckpointSaveError as exc:
            last = [b for b in self.backups() if b[0] != epochs_done]
            kept = (f"the last good backup {last[0][1]} ({last[0][0]} epochs done) is intact"
                    if last else "there is no earlier backup")
            raise checkpoint.CheckpointSaveError(
                f"BackupAndRestore: could not back up epoch {epochs_done}: {exc}; {kept}",
                exc.errno, exc.filename) from exc
        # Only now that the new copy is complete, drop copies beyond the `keep` newest.
        for _, old in self.backups()[self.keep:]:
            with contextlib.suppress(FileNotFoundError):
                os.remove(old)

    def _remove_partial_writes(self) -> None:
        # Temporary files of a save interrupted by a crash (checkpoint.save never renamed them).
        for name in os.listdir(self.backup_dir):
            if name.startswith(".backup-epoch-") and name.endswith(".tmp"):
                with contextlib.suppress(FileNotFoundError):
                    os.remove(os.path.join(self.backup_dir, name))

    def on_train_end(self, logs=None) -> None:
        if not (self.delete_checkpoint and _monitor.is_main(self.model)):
            return
        if self._not_saved is not None:
            # training stopped on an unfinished epoch or NaN weights: the backups are what is left
            # to resume from, so they stay (a rerun resumes from the last good one)
            _monitor.notice(f"BackupAndRestore: keeping the backups in {self.backup_dir} because "
                            f"{self._not_saved}")
            return
        for _, path in self.backups():
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)
        self._remove_partial_writes()
        with contextlib.suppress(OSError):  # left in place if the user keeps other files there
            os.rmdir(self.backup_dir)


def _strategy(model: Any) -> Any:
    return getattr(getattr(model, "_trainer", None), "strategy", None)


def _rank_rng_states(strategy: Any) -> list[torch.Tensor] | None:
    """Every rank's generator states, serialized (uint8 tensors in rank order, on rank 0 and the
    others alike), or None in one process. A collective: every rank calls it."""
    if strategy is None or getattr(strategy, "world_size", 1) <= 1:
        return None
    buffer = io.BytesIO()
    state = _get_rng_state()
    state["numpy"] = {**state["numpy"], "keys": torch.from_numpy(state["numpy"]["keys"].astype(np.int64))}
    torch.save(state, buffer)
    mine = torch.frombuffer(bytearray(buffer.getvalue()), dtype=torch.uint8)
    return [t.clone() for t in strategy.gather(mine)]


def _from_bytes(blob: torch.Tensor) -> dict[str, Any]:
    state = torch.load(io.BytesIO(blob.numpy().tobytes()), weights_only=True)
    state["numpy"]["keys"] = state["numpy"]["keys"].numpy().astype(np.uint32)
    return state


def _get_rng_state() -> dict[str, Any]:
    np_state = np.random.get_state()
    return {
        "torch": torch.get_rng_state(),
        "cuda": cuda.rng_states(),
        "numpy": {"name": np_state[0], "keys": np_state[1], "pos": int(np_state[2]),
                  "has_gauss": int(np_state[3]), "cached_gaussian": float(np_state[4])},
        "python": _python_state_to_plain(random.getstate()),
    }


def _set_rng_state(state: dict[str, Any]) -> None:
    if "torch" in state:
        torch.set_rng_state(state["torch"])
    if state.get("cuda"):
        cuda.set_rng_states(state["cuda"])
    if "numpy" in state:
        s = state["numpy"]
        np.random.set_state((s["name"], s["keys"], s["pos"], s["has_gauss"], s["cached_gaussian"]))
    if "python" in state:
        version, internal, gauss = state["python"]
        random.setstate((version, tuple(internal), gauss))


def _python_state_to_plain(state: tuple) -> list[Any]:
    version, internal, gauss = state
    return [version, list(internal), gauss]
