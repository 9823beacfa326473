"""Gradients that outlive a CUDA graph's memory: what gradient accumulation needs under ``jit=on``
(``reduce-overhead``) on a GPU.

Why (torch 2.13's source; reasoned, not measured on a GPU):

* every call of a ``torch.compile`` function bumps Dynamo's generation (``OptimizeContext``'s
  ``on_enter``: ``mutation_guard.install_generation_tagging_init`` does ``generation += 1``);
* inductor's CUDA-graph trees start a new generation at a call in a new generation once no forward
  waits for its backward (``cudagraph_trees.py``: ``can_start_new_generation``), and then free the
  outputs of the previous path (``dealloc_current_path_weakrefs``), the backward's too;
* the backward's outputs are the parameters' gradients: when ``p.grad`` is None, ``AccumulateGrad``
  *steals* the output tensor (``autograd/functions/accumulate_grad.h``, case 1.1: a dense,
  stealable new_grad becomes ``p.grad``, counting the extra reference of a cached CUDA-graph
  tensor), so ``p.grad`` lives in the graph pool;
* the next compiled call (the next micro-batch's forward under ``fit(accumulate=k)``, an
  out-of-memory split, DDP's ``no_sync`` micro-batches, or the compiled optimizer update) starts a
  new generation and frees it; the next ``p.grad += g`` (``accumulate_grad.h`` case 2.3) or the
  update's read of ``p.grad`` then raises torch's "accessing gradient tensor output of CUDAGraphs
  that has been overwritten by a subsequent run" (pytorch#169545); torch's own advice in that
  message: "allocate stable .grad buffers outside CUDAGraph capture before the compiled backward
  runs".

So under CUDA graphs the trainer keeps stable buffers (:class:`StableGrads`): after a backward that
left a gradient torch did not get from us (the first one, or the first after the gradients were set
to None: an out-of-memory retry, a stopped step), each such ``p.grad`` is copied out of the pool
once; from then on a finished step's gradients are zeroed in place (one ``_foreach_zero_``) instead
of set to None, so every backward adds into the same buffers (``variable_grad += new_grad``) and a
new generation frees nothing the step still reads. The buffers are marked static addresses
(``torch._dynamo.mark_static_address``), so the compiled optimizer update reads them in place: a
non-static gradient is copied into the graph's memory at every replay (``_dynamo/variables/
optimizer.py``: "Grad tensors ... will be copied during cudagraphs execution").

Marking the step begin (``torch.compiler.cudagraph_mark_step_begin``) would not help: it only makes
``can_start_new_generation`` answer yes sooner, and freeing the stolen gradients is exactly the
problem. Running the micro-batches without CUDA graphs would lose the graphs for every step of a run
that splits.

What changes against eager: a parameter that got a gradient once and none in a later step updates
with a zero gradient (eager skips a None one), as torch's ``zero_grad(set_to_none=False)`` does;
a Keras 2 model has no such parameter (Keras 2 refuses a None gradient).

Example::

    >>> w = torch.nn.Parameter(torch.ones(2)); grads = StableGrads(lambda: [w])
    >>> (w * 3).sum().backward(); grads.settle(); first = w.grad
    >>> grads.zero(); (w * 2).sum().backward(); grads.settle()
    >>> w.grad is first, w.grad.tolist(), grads.copied
    (True, [2.0, 2.0], 1)
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import torch

__all__ = ["StableGrads", "is_static", "mark_static"]


def is_static(tensor: torch.Tensor) -> bool:
    """Whether ``tensor`` is marked a static address (``torch._dynamo.utils.get_static_address_type``)."""
    return torch._dynamo.utils.get_static_address_type(tensor) is not None


def mark_static(tensor: torch.Tensor) -> None:
    """Mark ``tensor`` a static address for CUDA graphs, unguarded: a new address re-records the
    graph (``mark_static_address(guard=False)``) instead of recompiling it."""
    torch._dynamo.mark_static_address(tensor, guard=False)


class StableGrads:
    """The gradient buffers of ``params()`` (the optimizer's parameters) under CUDA graphs: see the
    module doc. ``zero()`` at a step's first backward, ``settle()`` after each backward,
    ``unsettle()`` when the gradients were set to None; ``copied`` counts gradients copied out."""

    def __init__(self, params: Callable[[], Iterable[torch.Tensor]]) -> None:
        self.params = params
        self.settled = False
        self.copied = 0

    def zero(self) -> None:
        """A finished step's gradients, zeroed in place (the buffers stay where they are)."""
        grads = [p.grad for p in self.params() if p.grad is not None]
        if grads:
            torch._foreach_zero_(grads)

    def unsettle(self) -> None:
        """The gradients were set to None: the next backward's are checked again."""
        self.settled = False

    def settle(self) -> None:
        """After a backward: each gradient not in a buffer of ours is copied into a new one,
        marked static; nothing to do once settled."""
        if self.settled:
            return
        for p in self.params():
            grad = p.grad
            if grad is not None and not is_static(grad):
                p.grad = grad.clone()  # outside any graph's pool: the caching allocator's
                mark_static(p.grad)
                self.copied += 1
        self.settled = True
