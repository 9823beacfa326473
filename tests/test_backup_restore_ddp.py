"""BackupAndRestore under data parallel: 2 gloo processes through the launcher. Only rank 0 writes
backups; on restart every rank restores the same backup and continues with the same epoch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest


def _backups(backup_dir):
    return sorted(os.listdir(backup_dir))


DDP_SCRIPT = textwrap.dedent('''
    import json, os, sys
    import numpy as np, torch, arignote
    from arignote import checkpoint
    from arignote.callbacks import BackupAndRestore
    from arignote.models import Model

    rank = int(os.environ.get("RANK", "0"))
    arignote.configure(device="cpu", cpu_processes=2, print_active_device=False)
    saves = []
    real_save = checkpoint.save
    def counting_save(path, obj):
        saves.append(os.path.basename(path))
        real_save(path, obj)
    checkpoint.save = counting_save
    rng = np.random.default_rng(0)
    x, y = rng.random((64, 6)).astype("float32"), rng.random((64, 3)).astype("float32")
    torch.manual_seed(0)
    model = Model(torch.nn.Sequential(torch.nn.Linear(6, 8), torch.nn.Tanh(), torch.nn.Linear(8, 3)))
    model.compile("adam", "mse")
    epochs, delete = int(sys.argv[2]), sys.argv[3] == "delete"
    backup = BackupAndRestore(os.path.join(sys.argv[1], "backup"), delete_checkpoint=delete)

    class Generators(arignote.callbacks.Callback):
        # this rank's torch generator state (a digest) after the backup saved it / restored it
        def __init__(self):
            super().__init__()
            self.seen = {}

        def on_train_begin(self, logs=None):
            self.seen["begin"] = torch.get_rng_state().sum().item()

        def on_epoch_end(self, epoch, logs=None):
            self.seen[f"end{epoch}"] = torch.get_rng_state().sum().item()

    gens = Generators()
    history = model.fit(x, y, batch_size=16, epochs=epochs, verbose=0, callbacks=[backup, gens])
    with open(os.path.join(sys.argv[1], f"{sys.argv[4]}-rank{rank}.json"), "w") as fh:
        json.dump({"saves": saves, "epochs": history.epoch, "done": model.epochs_done, "rng": gens.seen,
                   "weights": [w.tolist() for w in model.get_weights()]}, fh)
''')


@pytest.mark.multiproc
@pytest.mark.slow
def test_two_ranks_only_rank0_writes_and_both_resume(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(DDP_SCRIPT)
    env = {k: v for k, v in os.environ.items()
           if k not in ("ARIGNOTE_FLAGS", "RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT")}
    env["ARIGNOTERC"] = ""  # read no rc file

    def run(epochs, delete, tag):
        proc = subprocess.run([sys.executable, str(script), str(tmp_path), str(epochs), delete, tag],
                              cwd=tmp_path, env=env, capture_output=True, text=True, timeout=240)
        assert proc.returncode == 0, proc.stderr[-3000:]
        return [json.loads((tmp_path / f"{tag}-rank{r}.json").read_text()) for r in (0, 1)]

    first = run(2, "keep", "first")
    assert first[0]["saves"] == ["backup-epoch-000001.ckpt", "backup-epoch-000002.ckpt"]
    assert first[1]["saves"] == []  # rank 1 never writes
    assert _backups(tmp_path / "backup") == ["backup-epoch-000001.ckpt", "backup-epoch-000002.ckpt"]
    second = run(4, "delete", "second")
    for r in second:  # both ranks restored the backup and continued with epoch 2
        assert r["epochs"] == [2, 3] and r["done"] == 4
    assert second[1]["saves"] == []
    for a, b in zip(second[0]["weights"], second[1]["weights"]):
        assert np.array_equal(np.asarray(a), np.asarray(b))
    assert not (tmp_path / "backup").exists()
    # each rank got its own generators back (rank 0 draws the epoch orders, so theirs differ)
    assert first[0]["rng"]["end1"] != first[1]["rng"]["end1"]
    for r in (0, 1):
        assert second[r]["rng"]["begin"] == first[r]["rng"]["end1"]
