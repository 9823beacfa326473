"""Keras 2 ``keras.backend`` loops, CTC and small helpers on torch (re-exported by
:mod:`arignote.backend`): ``rnn``, ``map_fn``/``foldl``/``foldr``, ``ctc_batch_cost``/``ctc_decode``,
``in_top_k``, ``print_tensor``, ``control_dependencies`` and the random variables.

torch runs operations when they are called, so the loops are Python loops over the first (time)
axis and ``control_dependencies`` has nothing to order. The CTC functions take what Keras's take:
softmax probabilities ``(batch, time, classes)`` whose last class is the blank.

Example::

    >>> import torch
    >>> from arignote import backend as K
    >>> K.foldl(lambda acc, x: acc + x, torch.tensor([1., 2., 3.])).item()
    6.0
    >>> K.in_top_k(torch.tensor([[0.1, 0.7, 0.2]]), torch.tensor([2]), 2).tolist()
    [True]
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import torch
import torch.nn.functional as F

from arignote.backend import common as backend_common
from arignote.backend.names import CONTROL_FUNCTIONS
from arignote.graph import state
from arignote.layers.op_layer import symbolic
from arignote.ops.tensor import _t, _torch_dtype, variable

__all__ = list(CONTROL_FUNCTIONS)


# ---------------------------------------------------------------------- loops


def _where(mask_t: torch.Tensor, new: torch.Tensor, old: torch.Tensor) -> torch.Tensor:
    m = mask_t.reshape(mask_t.shape[0], *([1] * (new.dim() - 1)))
    return torch.where(m, new, old)


@symbolic
def rnn(step_function: Callable, inputs: Any, initial_states: Any, go_backwards: bool = False,
        mask: Any = None, constants: Any = None, unroll: bool = False,
        input_length: Any = None) -> tuple[torch.Tensor, torch.Tensor, list]:
    """Keras 2 ``K.rnn``: ``step_function(inputs_t, states + constants) -> (output_t, new_states)`` over
    the time axis of ``inputs`` ``(samples, time, ...)``; returns ``(last_output, outputs, new_states)``.

    ``outputs`` are in the order the steps ran (reversed input order with ``go_backwards``). Where
    ``mask`` ``(samples, time)`` is 0, a step keeps the previous output (zeros before the first) and
    the previous states, as Keras's. ``unroll`` and ``input_length`` change nothing here: torch always
    runs the loop step by step.

    >>> step = lambda x, s: (x + s[0], [x + s[0]])  # a running sum
    >>> last, outs, states = rnn(step, torch.ones(1, 3, 1), [torch.zeros(1, 1)])
    >>> outs.flatten().tolist(), states[0].item()
    ([1.0, 2.0, 3.0], 3.0)
    """
    x = _t(inputs)
    if x.dim() < 3:
        raise ValueError(f"K.rnn: inputs must be at least 3-D (samples, time, ...), got shape "
                         f"{tuple(x.shape)}")
    states = [_t(s) for s in (initial_states or [])]
    constants = list(constants or [])
    m = None
    if mask is not None:
        m = _t(mask)
        if m.dim() == 3 and m.shape[-1] == 1:
            m = m[..., 0]
        if m.dim() != 2 or tuple(m.shape) != tuple(x.shape[:2]):
            raise ValueError(f"K.rnn: mask should have shape (samples, time) = {tuple(x.shape[:2])}, "
                             f"got {tuple(m.shape)}")
        m = m.bool()
    steps = range(x.shape[1] - 1, -1, -1) if go_backwards else range(x.shape[1])
    outputs: list[torch.Tensor] = []
    for t in steps:
        output, new_states = step_function(x[:, t], list(states) + constants)
        new_states = list(new_states) if isinstance(new_states, (list, tuple)) else [new_states]
        if len(new_states) != len(states):
            raise ValueError(f"K.rnn: step_function returned {len(new_states)} states for "
                             f"{len(states)} initial_states; return as many, in the same order")
        if m is not None:
            prev = outputs[-1] if outputs else torch.zeros_like(output)
            output = _where(m[:, t], output, prev)
            new_states = [_where(m[:, t], new, old) for new, old in zip(new_states, states)]
        outputs.append(output)
        states = new_states
    if not outputs:
        raise ValueError("K.rnn: inputs have no time steps (time axis of length 0)")
    stacked = torch.stack(outputs, dim=1)
    return outputs[-1], stacked, states


def _stack(results: list) -> Any:
    first = results[0]
    if isinstance(first, (list, tuple)):
        return type(first)(_stack([r[i] for r in results]) for i in range(len(first)))
    return torch.stack([_t(r) for r in results])


def _unstack(elems: Any) -> tuple[list, bool]:
    if isinstance(elems, (list, tuple)) and not isinstance(elems[0], (int, float)):
        ts = [_t(e) for e in elems]
        return [tuple(t[i] for t in ts) for i in range(ts[0].shape[0])], True
    t = _t(elems)
    return [t[i] for i in range(t.shape[0])], False


@symbolic
def map_fn(fn: Callable, elems: Any, name: str | None = None, dtype: Any = None) -> Any:  # noqa: ARG001
    """Keras 2 ``K.map_fn``: ``fn`` applied to each slice ``elems[i]``, results stacked (a tuple of
    tensors as ``elems`` gives ``fn`` a tuple); ``dtype`` casts the result.

    >>> map_fn(lambda row: row.sum(), torch.tensor([[1., 2.], [3., 4.]])).tolist()
    [3.0, 7.0]
    """
    items, _ = _unstack(elems)
    if not items:
        raise ValueError("K.map_fn: elems is empty (its first axis has length 0)")
    out = _stack([fn(e) for e in items])
    if dtype is not None:
        dt = _torch_dtype(dtype)
        out = type(out)(o.to(dt) for o in out) if isinstance(out, (list, tuple)) else out.to(dt)
    return out


def _fold(fn: Callable, elems: Any, initializer: Any, reverse: bool, where: str) -> Any:
    items, _ = _unstack(elems)
    if reverse:
        items = items[::-1]
    if initializer is None:
        if not items:
            raise ValueError(f"K.{where}: elems is empty and no initializer is given")
        acc, items = items[0], items[1:]
    else:
        acc = initializer
    for item in items:
        acc = fn(acc, item)
    return acc


@symbolic
def foldl(fn: Callable, elems: Any, initializer: Any = None, name: str | None = None) -> Any:  # noqa: ARG001
    """Keras 2 ``K.foldl``: ``acc = fn(acc, elems[i])`` left to right, from ``initializer`` (or ``elems[0]``).

    >>> foldl(lambda acc, x: acc * 10 + x, torch.tensor([1., 2., 3.])).item()
    123.0
    """
    return _fold(fn, elems, initializer, False, "foldl")


@symbolic
def foldr(fn: Callable, elems: Any, initializer: Any = None, name: str | None = None) -> Any:  # noqa: ARG001
    """Keras 2 ``K.foldr``: as :func:`foldl` from right to left (``initializer`` or ``elems[-1]`` first).

    >>> foldr(lambda acc, x: acc * 10 + x, torch.tensor([1., 2., 3.])).item()
    321.0
    """
    return _fold(fn, elems, initializer, True, "foldr")


@contextlib.contextmanager
def control_dependencies(control_inputs: Any) -> Iterator[None]:  # noqa: ARG001 - Keras's signature
    """Keras 2 ``K.control_dependencies``: nothing to do, torch runs operations in program order.

    >>> with control_dependencies([]):
    ...     pass
    """
    yield


# ---------------------------------------------------------------------- small helpers


@symbolic
def in_top_k(predictions: Any, targets: Any, k: int) -> torch.Tensor:
    """Keras 2 ``K.in_top_k``: whether ``predictions[i, targets[i]]`` is among the ``k`` largest of row
    ``i`` (ties at the boundary count as in, as TensorFlow's); ``(batch,)`` booleans.

    >>> in_top_k(torch.tensor([[0.1, 0.5, 0.5]]), torch.tensor([1]), 1).tolist()
    [True]
    """
    p, tg = _t(predictions), _t(targets).long().reshape(-1)
    if p.dim() != 2 or p.shape[0] != tg.shape[0]:
        raise ValueError(f"K.in_top_k: predictions must be (batch, classes) and targets (batch,), got "
                         f"{tuple(p.shape)} and {tuple(_t(targets).shape)}")
    k = int(k)
    if k < 1:
        return torch.zeros(tg.shape, dtype=torch.bool, device=p.device)
    if k >= p.shape[1]:
        return torch.ones(tg.shape, dtype=torch.bool, device=p.device)
    kth = torch.topk(p, k, dim=1).values[:, -1]
    return p.gather(1, tg.unsqueeze(1)).squeeze(1) >= kth


@symbolic
def print_tensor(x: Any, message: str = "") -> torch.Tensor:
    """Keras 2 ``K.print_tensor``: print ``message`` and the value, return ``x`` (use what it returns).

    >>> _ = print_tensor(torch.tensor([1., 2.]), "x is:")
    x is: [1. 2.]
    """
    t = _t(x)
    if not state.is_probing():  # not the zeros a functional graph runs to learn shapes
        print(message, t.detach().cpu().numpy())
    return t


def _random_variable(shape: Any, dtype: Any, name: Any, seed: Any, draw: Callable) -> torch.Tensor:
    rng = np.random.RandomState(int(seed)) if seed is not None else np.random
    return variable(draw(rng, tuple(int(d) for d in shape)), dtype=dtype, name=name)


def random_normal_variable(shape: Any, mean: float, scale: float, dtype: Any = None, name: Any = None,
                           seed: Any = None) -> torch.Tensor:
    """Keras 2 ``K.random_normal_variable``: a variable drawn from N(``mean``, ``scale``²) (numpy's random
    state, or ``seed``).

    >>> random_normal_variable((2, 3), 0.0, 1.0, seed=1).shape
    torch.Size([2, 3])
    """
    return _random_variable(shape, dtype, name, seed, lambda rng, s: rng.normal(mean, scale, s))


def random_uniform_variable(shape: Any, low: float, high: float, dtype: Any = None, name: Any = None,
                            seed: Any = None) -> torch.Tensor:
    """Keras 2 ``K.random_uniform_variable``: a variable drawn uniformly from [``low``, ``high``).

    >>> bool((random_uniform_variable((100,), 2.0, 3.0, seed=1) >= 2.0).all())
    True
    """
    return _random_variable(shape, dtype, name, seed, lambda rng, s: rng.uniform(low, high, s))


# ---------------------------------------------------------------------- CTC


def _lengths(value: Any, batch: int, name: str, where: str) -> torch.Tensor:
    t = _t(value).long().reshape(-1)
    if t.shape[0] != batch:
        raise ValueError(f"K.{where}: {name} must hold one length per sample ({batch}), got shape "
                         f"{tuple(_t(value).shape)}")
    return t


def ctc_label_dense_to_sparse(labels: Any, label_lengths: Any) -> torch.Tensor:
    """Keras 2 ``K.ctc_label_dense_to_sparse``: the first ``label_lengths[i]`` labels of each row as a
    sparse COO tensor of the dense shape (torch's ``ctc_loss`` itself takes the dense padded labels).

    >>> sparse = ctc_label_dense_to_sparse(torch.tensor([[1, 2, 7], [3, 7, 7]]), torch.tensor([2, 1]))
    >>> sparse.to_dense().tolist()
    [[1, 2, 0], [3, 0, 0]]
    """
    lab = _t(labels)
    lengths = _lengths(label_lengths, lab.shape[0], "label_lengths", "ctc_label_dense_to_sparse")
    keep = torch.arange(lab.shape[1], device=lab.device).unsqueeze(0) < lengths.unsqueeze(1)
    indices = keep.nonzero().t()
    return torch.sparse_coo_tensor(indices, lab[keep], tuple(lab.shape), check_invariants=True)


def _ctc_log_probs(y_pred: Any, where: str) -> torch.Tensor:
    p = _t(y_pred)
    if p.dim() != 3:
        raise ValueError(f"K.{where}: y_pred must be softmax outputs (samples, time_steps, classes), got "
                         f"shape {tuple(p.shape)}")
    return torch.log(p + backend_common.epsilon())


@symbolic
def ctc_batch_cost(y_true: Any, y_pred: Any, input_length: Any, label_length: Any) -> torch.Tensor:
    """Keras 2 ``K.ctc_batch_cost``: the CTC loss of each sample, ``(samples, 1)``.

    ``y_true`` ``(samples, max_label_length)`` labels (padded), ``y_pred`` softmax outputs
    ``(samples, time_steps, classes)`` with the blank as the last class, ``input_length`` and
    ``label_length`` ``(samples, 1)``. As Keras's TensorFlow backend: ``log(y_pred + epsilon)``,
    renormalized over the classes.

    >>> y_pred = torch.full((1, 2, 2), 0.5)  # one label class (0) and the blank (1)
    >>> round(ctc_batch_cost(torch.tensor([[0]]), y_pred, torch.tensor([[2]]), torch.tensor([[1]])).item(), 4)
    0.2877
    """
    logp = torch.log_softmax(_ctc_log_probs(y_pred, "ctc_batch_cost"), dim=-1)
    batch, _, classes = logp.shape
    labels = _t(y_true).long()
    in_len = _lengths(input_length, batch, "input_length", "ctc_batch_cost")
    lab_len = _lengths(label_length, batch, "label_length", "ctc_batch_cost")
    # padding past label_length may hold anything; a real label must not be the blank
    if any(int(labels[i, :n].max()) >= classes - 1 for i, n in enumerate(lab_len.tolist()) if n > 0):
        raise ValueError(f"K.ctc_batch_cost: labels must be < {classes - 1}: class {classes - 1} (the last) "
                         "is the blank")
    loss = F.ctc_loss(logp.transpose(0, 1).float(), labels, in_len, lab_len, blank=classes - 1,
                      reduction="none", zero_infinity=False)
    return loss.to(logp.dtype).unsqueeze(1)


def _collapse(path: list, blank: int, merge_repeated: bool) -> list:
    out, prev = [], None
    for c in path:
        if c != blank and not (merge_repeated and c == prev):
            out.append(c)
        prev = c
    return out


def _prefix_beam(logp: np.ndarray, blank: int, beam_width: int, top_paths: int) -> list:
    """CTC prefix beam search on one sequence ``(time, classes)`` of log-probabilities: the
    ``top_paths`` best label sequences with their log-probabilities (summed over alignments)."""
    def add(a: float, b: float) -> float:
        if a == -math.inf:
            return b
        if b == -math.inf:
            return a
        hi = max(a, b)
        return hi + math.log1p(math.exp(-abs(a - b)))

    beams: dict[tuple, tuple[float, float]] = {(): (0.0, -math.inf)}  # prefix -> (p_blank, p_label)
    for frame in logp:
        nxt: dict[tuple, list[float]] = {}
        for prefix, (pb, pnb) in beams.items():
            total = add(pb, pnb)
            entry = nxt.setdefault(prefix, [-math.inf, -math.inf])
            entry[0] = add(entry[0], total + frame[blank])
            if prefix:
                entry[1] = add(entry[1], pnb + frame[prefix[-1]])
            for c in range(len(frame)):
                if c == blank:
                    continue
                new = prefix + (c,)
                e = nxt.setdefault(new, [-math.inf, -math.inf])
                e[1] = add(e[1], (pb if prefix and c == prefix[-1] else total) + frame[c])
        ranked = sorted(nxt.items(), key=lambda kv: add(*kv[1]), reverse=True)[:beam_width]
        beams = {k: (v[0], v[1]) for k, v in ranked}
    ranked = sorted(beams.items(), key=lambda kv: add(*kv[1]), reverse=True)[:top_paths]
    return [(list(k), add(*v)) for k, v in ranked]


def _dense(seqs: list, device: torch.device) -> torch.Tensor:
    width = max((len(s) for s in seqs), default=0)
    out = torch.full((len(seqs), width), -1, dtype=torch.int64, device=device)
    for i, s in enumerate(seqs):
        if s:
            out[i, :len(s)] = torch.tensor(s, dtype=torch.int64)
    return out


@symbolic
def ctc_decode(y_pred: Any, input_length: Any, greedy: bool = True, beam_width: int = 100, top_paths: int = 1,
               merge_repeated: bool = False) -> tuple[list, torch.Tensor]:
    """Keras 2 ``K.ctc_decode``: ``([decoded], log_probs)``, each decoded ``(samples, longest)`` padded
    with ``-1``.

    ``greedy=True`` (TensorFlow's best path): the most likely class of each step, repeats merged and
    blanks (the last class) dropped; ``log_probs`` ``(samples, 1)`` is, as TensorFlow's, minus the sum
    of the chosen steps' log-probabilities. ``greedy=False``: a CTC prefix beam search keeping
    ``beam_width`` prefixes, the ``top_paths`` best as a list of decoded tensors, ``log_probs``
    ``(samples, top_paths)`` their log-probabilities (``merge_repeated`` also merges repeats that a blank
    separates, as TensorFlow's beam decoder). On symbolic tensors it records a node for
    ``K.function``; the decoded width is only known per batch.

    >>> y = torch.tensor([[[0.9, 0.1], [0.8, 0.2], [0.1, 0.9], [0.7, 0.3]]])  # class 1 is the blank
    >>> ctc_decode(y, torch.tensor([4]))[0][0].tolist()
    [[0, 0]]
    """
    logp = _ctc_log_probs(y_pred, "ctc_decode")
    batch, _, classes = logp.shape
    lengths = _lengths(input_length, batch, "input_length", "ctc_decode")
    blank = classes - 1
    if greedy:
        best, idx = logp.max(dim=-1)
        seqs, scores = [], []
        for i, n in enumerate(lengths.tolist()):
            seqs.append(_collapse(idx[i, :n].tolist(), blank, True))
            scores.append(-best[i, :n].sum())
        return [_dense(seqs, logp.device)], torch.stack(scores).reshape(batch, 1)
    if int(top_paths) < 1 or int(beam_width) < int(top_paths):
        raise ValueError(f"K.ctc_decode: need 1 <= top_paths <= beam_width, got top_paths={top_paths}, "
                         f"beam_width={beam_width}")
    norm = torch.log_softmax(logp, dim=-1).detach().cpu().double().numpy()
    found = [_prefix_beam(norm[i, :n], blank, int(beam_width), int(top_paths))
             for i, n in enumerate(lengths.tolist())]
    decoded, scores = [], np.full((batch, int(top_paths)), -np.inf)
    for p in range(int(top_paths)):
        seqs = []
        for i, paths in enumerate(found):
            seq, score = paths[p] if p < len(paths) else ([], -np.inf)
            seqs.append(_collapse(seq, -1, True) if merge_repeated else seq)
            scores[i, p] = score
        decoded.append(_dense(seqs, logp.device))
    return decoded, torch.as_tensor(scores, dtype=logp.dtype)
