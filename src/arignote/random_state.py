"""Whose random stream a run follows: ``torch.manual_seed`` if the user called it, else numpy's.

Keras 2 tutorials fix a run with ``numpy.random.seed(7)`` (usually after ``import keras``): on
Theano every initializer and noise layer with ``seed=None`` drew its seed from numpy, and fit
shuffled with ``np.random.shuffle``. arignote draws from torch's global RNG, whose seed is random per
process until someone seeds it. The rule here:

- **torch mode**: the user seeded torch (``torch.manual_seed(s)`` or ``torch.seed()``): nothing is
  touched, torch semantics exactly.
- **numpy mode** (no torch seed by the user): before a source of randomness draws (a random
  initializer, a Dropout/noise layer being built or a backend ``random_*`` op, each with
  ``seed=None``; the start of ``fit``), torch's global RNG is seeded from a numpy draw, the same
  ``np.random.randint(1, 10e6)`` Keras 2.3.1 made there, so building a model leaves numpy's stream
  where Keras left it (tests/test_random_state.py checks against Keras itself). With
  ``np.random.seed(7)`` the weights, Dropout masks, noise and shuffle order then repeat run to run;
  without it they stay random.

"The user seeded torch" is told apart from torch's own random start by the value of
``torch.initial_seed()``: what it was when this module was imported (a random 64-bit number when
nobody seeded torch yet) or the last seed arignote set itself means numpy mode, anything else means
torch mode. A seed below 2**32 already there at import (``torch.manual_seed(0)`` before the first
arignote model import) counts as the user's: torch's random start is that small once in 2**32 runs.

Example::

    >>> import numpy as np, torch
    >>> _ = torch.manual_seed(0); torch_mode()
    True
    >>> follow_numpy()  # torch mode: nothing happens, numpy's stream is untouched
    >>> torch.initial_seed()
    0
"""

from __future__ import annotations

import numpy as np
import torch

__all__ = ["torch_mode", "follow_numpy"]

_USER_SEED_BELOW = 2**32
_start = torch.initial_seed()
_start = None if _start < _USER_SEED_BELOW else _start  # small: the user seeded before importing us
_own: int | None = None  # the last seed follow_numpy gave torch


def torch_mode() -> bool:
    """True when the user seeded torch (randomness then follows torch only)."""
    seed = torch.initial_seed()
    return seed != _start and seed != _own


def follow_numpy() -> None:
    """In numpy mode, seed torch's global RNG from one numpy draw (``np.random.randint``, as Keras 2
    drew initializer seeds); in torch mode do nothing."""
    global _own
    if torch.compiler.is_compiling() or torch_mode():  # a compiled step keeps torch's stream (no graph break)
        return
    _own = int(np.random.randint(1, 10**7))  # the same draw as Keras 2 (`np.random.randint(1, 10e6)`)
    torch.manual_seed(_own)
