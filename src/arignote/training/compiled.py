"""Compiled steps: ``model.compile(..., jit_compile=True)`` or the ``jit`` flag run the step's
arithmetic through ``torch.compile``.

What is compiled, per model (per :class:`~arignote.training.loop.Trainer`):

* the training forward + loss + layer penalties; AOTAutograd compiles its backward with it, so
  ``loss.backward()`` runs one compiled backward graph (under data parallel the module called is the
  DDP one: DDP's own forward hooks run eagerly and Dynamo's ``optimize_ddp`` splits the graph at
  the gradient buckets so the reduction still overlaps the backward, PyTorch's guidance for
  ``torch.compile(DDP(model))``);
* the evaluation forward + loss and the prediction forward (their own graphs: eval mode, no grad);
* the optimizer update (:mod:`arignote.training.compiled_update`): torch's ``step()`` without its
  graph breaks, in a graph of this trainer's own, reading each param group's learning rate from a
  0-d tensor on the parameters' device while it runs (a new value from ``decay``,
  ``K.set_value(model.optimizer.lr, x)`` or LR callbacks is written into it and read by the same
  graph, never a recompile); between steps the groups hold the float, as eager ones do. torch's
  fused kernels (Adam, SGD; Adagrad on the CPU) run as they are: one kernel already, which Dynamo
  does not trace. Clipping, the decay schedule and the iteration count stay in
  :class:`arignote.optimizers.Optimizer`'s Python around it.

The loop's control stays in Python between them: the out-of-memory guard, DDP's arming and the
ranks' agreement, the metric sums on the device.

Shapes: the first batch size is compiled with static shapes (the fastest kernels); the first *other*
size (the last, partial batch of an epoch, an out-of-memory micro-batch, a validation batch) makes
Dynamo compile once more with the batch dimension symbolic ("automatic dynamic shapes"), and that
graph serves every further size. So an epoch with a partial last batch costs two Dynamo graphs in its
first epoch and none after (a batch of exactly 1 sample is a third: Dynamo specializes sizes 0 and 1).

Under CUDA graphs (``reduce-overhead`` on a GPU) that is not the whole cost: inductor records one CUDA
graph per distinct size the symbolic graph meets (``cudagraph_trees.cudagraphify_impl`` keys its
recordings on the graph's integer inputs; ``cudagraph_dynamic_shape_warn_limit``, 8, warns beyond),
each a recording and memory in the graph pool. So under CUDA graphs (:class:`SteadySizes`) a batch
smaller than the largest met in the same fit, evaluate or predict call (the last, partial batch) runs
the eager step, and ``batch_size="auto"``'s trial sizes run eagerly: what is recorded is the batch
size, its out-of-memory micro-batches (at most two sizes per split), the validation batch size.
``CompiledSteps.sizes.recorded`` counts them per step; ``SteadySizes.eager_batches`` the batches run
eagerly. Padding the batch instead would put padded rows into BatchNorm's statistics.

Each trainer compiles its own copies of the step functions (a fresh code object per trainer): Dynamo
keeps its cache and its recompile limit per code object, so many models in one process (a test
suite, a hyper-parameter search) neither share nor exhaust one cache, and a model's graphs are freed
with it.

Example (a model, arrays ``x``, ``y`` whose length is not a multiple of the batch)::

    model.compile("adam", "mse", jit_compile=True)      # or: arignote.configure(jit="on")
    model.fit(x, y, epochs=3)                           # graphs: 2 (full batch, then any size)
    model._trainer.compiled.graphs                      # 2 after epoch 1, still 2 after epoch 3
    model._trainer.compiled.sizes.recorded              # on a GPU: {'train': {32}} (partial: eager)
"""

from __future__ import annotations

import functools
import sys
import types
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import torch

from arignote import config
from arignote.errors import ConfigError
from arignote.training.compiled_update import CompiledUpdate

__all__ = ["MODES", "JitPlan", "CompiledSteps", "AllSizes", "SteadySizes", "check_jit_compile",
           "check_graphs_allocator", "resolve"]

# torch.compile's modes, as the `jit` flag and compile(jit_compile=...) accept them
MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# the modes that replay CUDA graphs, and what they are without them (off a GPU)
_NO_GRAPHS = {"reduce-overhead": "default", "max-autotune": "max-autotune-no-cudagraphs"}
_ACCEPTED = "True, False, None (the jit flag), 'on', 'off', " + ", ".join(repr(m) for m in MODES)


def check_jit_compile(value: Any) -> Any:
    """Validate ``compile(jit_compile=...)``: None (the ``jit`` flag decides), a bool, ``'on'``,
    ``'off'`` or a ``torch.compile`` mode; returns it unchanged, else one ValueError naming the choices.

    >>> check_jit_compile("reduce-overhead")
    'reduce-overhead'
    """
    if value is None or isinstance(value, bool) or value in ("on", "off", *MODES):
        return value
    raise ValueError(f"compile(jit_compile={value!r}): expected one of {_ACCEPTED}")


@dataclass(frozen=True)
class JitPlan:
    """How the steps are compiled: ``torch.compile`` ``mode`` and ``backend``, and where the setting
    came from (``compile(jit_compile=...)`` or the ``jit`` flag)."""

    mode: str
    backend: str
    source: str

    @property
    def cudagraphs(self) -> bool:
        """Whether the graphs are replayed as CUDA graphs (inductor's reduce-overhead/max-autotune)."""
        return self.backend == "inductor" and self.mode in _NO_GRAPHS

    def describe(self, device: torch.device) -> str:
        """One line for the start of training.

        >>> print(JitPlan("default", "inductor", "jit flag").describe(torch.device("cpu")))
        Step compiled: torch.compile(backend=inductor, mode=default) on cpu (jit flag); first steps compile
        """
        graphs = ", CUDA graphs" if self.cudagraphs and device.type == "cuda" else ""
        return (f"Step compiled: torch.compile(backend={self.backend}, mode={self.mode}{graphs}) "
                f"on {device} ({self.source}); first steps compile")


def resolve(jit_compile: Any, device: torch.device) -> tuple[JitPlan | None, list[str]]:
    """The plan for ``device`` from ``compile(jit_compile=...)`` (None: the ``jit`` flag), and the
    notices about settings that cannot take effect there.

    ``True``/``'on'`` means ``reduce-overhead`` (CUDA graphs) on a GPU and ``default`` elsewhere.

    >>> resolve(True, torch.device("cpu"))[0].mode
    'default'
    >>> resolve(False, torch.device("cpu"))
    (None, [])
    """
    check_jit_compile(jit_compile)
    if jit_compile is None:
        value, source = config.get("jit"), "jit flag"
    else:
        value, source = jit_compile, "compile(jit_compile=...)"
    if value is False or value == "off":
        return None, []
    mode = value if isinstance(value, str) and value != "on" else (
        "reduce-overhead" if device.type == "cuda" else "default")
    backend = config.get("jit.backend")
    notes = []
    if mode != "default" and backend != "inductor":
        notes.append(f"note: torch.compile mode {mode} is inductor's; jit.backend={backend} runs the "
                     "captured graphs without it")
    elif mode in _NO_GRAPHS and device.type != "cuda":
        notes.append(f"note: jit mode {mode} replays CUDA graphs, on GPUs only; on {device} the steps "
                     f"compile as mode {_NO_GRAPHS[mode]}")
        mode = _NO_GRAPHS[mode]
    check_graphs_allocator(JitPlan(mode, backend, source), device)
    if not torch._dynamo.is_dynamo_supported():
        raise RuntimeError(f"jit_compile ({source}) needs torch.compile, which this Python/platform does "
                           "not support (torch._dynamo.is_dynamo_supported() is False); turn it off")
    return JitPlan(mode, backend, source), notes


def check_graphs_allocator(plan: JitPlan, device: torch.device) -> None:
    """Refuse CUDA graphs (``plan``'s mode on a GPU) with the caching allocator off
    (``memory.preallocate < 0``): uncached memory is taken with ``cudaMalloc`` itself, which may not
    run while a CUDA graph is captured (CUDA refuses it: ``cudaErrorStreamCaptureUnsupported``), and
    torch records its graphs through the caching allocator's private pools
    (``torch.cuda.graphs.graph_pool_handle``, ``_use_cuda_memory_pool_manager`` in
    ``_inductor/cudagraph_trees.py``), which a disabled cache bypasses.

    >>> with config.override(memory_preallocate=-1):
    ...     check_graphs_allocator(JitPlan("reduce-overhead", "inductor", "jit flag"), torch.device("cuda:0"))
    Traceback (most recent call last):
    arignote.errors.ConfigError: jit mode reduce-overhead (jit flag) replays CUDA graphs, ...
    """
    if not (plan.cudagraphs and device.type == "cuda") or config.get("memory.preallocate") >= 0:
        return
    raise ConfigError(
        f"jit mode {plan.mode} ({plan.source}) replays CUDA graphs, which torch records in the caching "
        f"allocator's pools, but memory.preallocate={config.get('memory.preallocate'):g} (from "
        f"{config.source('memory.preallocate')}) turns the cache off, and uncached cudaMalloc cannot run "
        "while a graph is captured. Use memory.preallocate=0 (grow on demand) or a size with jit, or "
        "jit=default / jit=max-autotune-no-cudagraphs (no CUDA graphs) with memory.preallocate<0")


class AllSizes:
    """Every batch through the compiled step (no CUDA graphs: one symbolic graph serves all sizes)."""

    recorded: dict[str, set[int]] = {}
    eager_batches = 0

    def begin(self, kind: str) -> None:
        """A new fit, evaluate or predict pass of ``kind`` begins."""

    def pick(self, kind: str, n: int, compiled: Callable, eager: Callable) -> Callable:
        """The function to run a batch of ``n`` rows of ``kind`` with."""
        return compiled

    def trial(self, compiled: Callable, eager: Callable) -> Callable:
        """The function for a trial step of ``batch_size="auto"``."""
        return compiled


class SteadySizes(AllSizes):
    """Under CUDA graphs, which batches go through the compiled step (each new size there is a CUDA
    graph recorded and kept): a batch as large as the largest met in this pass of its ``kind``
    (``train``, ``evaluate``, ``predict``); a smaller one (the last, partial batch) and a trial step run
    the eager function. ``recorded`` holds the sizes each kind gave the compiled step (out-of-memory
    micro-batches included).

    >>> gate = SteadySizes(); gate.begin("train")
    >>> run, eager = (lambda x: "compiled"), (lambda x: "eager")
    >>> [gate.pick("train", len(x), run, eager)(x) for x in map(torch.zeros, (32, 32, 8))]
    ['compiled', 'compiled', 'eager']
    >>> gate.recorded, gate.eager_batches
    ({'train': {32}}, 1)
    """

    def __init__(self) -> None:
        self.largest: dict[str, int] = {}
        self.recorded = {}
        self.eager_batches = 0

    def begin(self, kind: str) -> None:
        self.largest[kind] = 0

    def pick(self, kind: str, n: int, compiled: Callable, eager: Callable) -> Callable:
        if n < self.largest.get(kind, 0):
            self.eager_batches += 1
            return eager
        self.largest[kind] = n
        return functools.partial(self._counted, self.recorded.setdefault(kind, set()), compiled)

    @staticmethod
    def _counted(sizes: set[int], compiled: Callable, x: Any, *rest: Any) -> Any:
        sizes.add(_rows(x))  # the batch, or an out-of-memory micro-batch of it
        return compiled(x, *rest)

    def trial(self, compiled: Callable, eager: Callable) -> Callable:
        return eager


def _rows(x: Any) -> int:
    while isinstance(x, (tuple, list, dict)):
        x = next(iter(x.values())) if isinstance(x, dict) else x[0]
    return len(x)


class _CountingInductor(torch._TorchCompileInductorWrapper):
    """torch.compile's own inductor backend object (modes applied as torch.compile does; private
    torch API, pinned by the tests), counting the graphs it compiles."""

    def __init__(self, mode: str) -> None:
        super().__init__(mode, None, None)
        self.graphs = 0

    def __call__(self, model_: Any, inputs_: Any, **kwargs: Any) -> Any:
        self.graphs += 1
        return super().__call__(model_, inputs_, **kwargs)


class _Counting:
    """A named Dynamo backend (aot_eager, eager), counting the graphs it is given."""

    def __init__(self, name: str) -> None:
        self.inner = torch._dynamo.lookup_backend(name)
        self.graphs = 0

    def __call__(self, gm: Any, example_inputs: Any) -> Any:
        self.graphs += 1
        return self.inner(gm, example_inputs)


def _fresh(method: Callable, name: str) -> Callable:
    """``method`` (bound) over a copy of its code object named ``name``: its own Dynamo cache."""
    func = method.__func__
    copy = types.FunctionType(func.__code__.replace(co_name=name), func.__globals__, name,
                              func.__defaults__, func.__closure__)
    return types.MethodType(copy, method.__self__)


class CompiledSteps:
    """The compiled functions of one trainer: ``train(x, y)``, ``evaluate(x, y)`` (both
    ``-> (loss, y_pred)``) and ``predict(x)``, from the trainer's eager ones; ``graphs`` counts the
    graphs compiled so far (Dynamo's, each with its backward when it has one).

    >>> steps = CompiledSteps(JitPlan("default", "aot_eager", "test"), f, g, h)   # doctest: +SKIP
    """

    def __init__(self, plan: JitPlan, train: Callable, evaluate: Callable, predict: Callable,
                 optimizer: Any = None) -> None:
        self.plan = plan
        self._codes: dict[str, types.CodeType] = {}
        self._limit_noticed: set[str] = set()
        self.backend = _CountingInductor(plan.mode) if plan.backend == "inductor" else _Counting(plan.backend)
        self.train = self._compile(train, "arignote_train_step")
        self.evaluate = self._compile(evaluate, "arignote_eval_step")
        self.predict = self._compile(predict, "arignote_predict_step")
        self.optimizer = optimizer
        self.update = None if optimizer is None else CompiledUpdate(optimizer, self._compile, plan.cudagraphs)
        self.sizes = SteadySizes() if plan.cudagraphs else AllSizes()

    def optimizer_step(self) -> None:
        """The torch optimizer's step (what ``Optimizer.step(torch_step)`` calls): see
        :class:`arignote.training.compiled_update.CompiledUpdate`."""
        self.update()

    @property
    def update_is_fused(self) -> bool:
        """Whether :meth:`optimizer_step` runs torch's fused kernel as it is, which can take
        GradScaler's ``found_inf`` on the device as the eager step does (no host read)."""
        return self.update is not None and self.update.plan().how == "fused"

    def _compile(self, method: Callable, name: str) -> Callable:
        fresh = _fresh(method, f"{name}_{id(self):x}")
        self._codes[name] = fresh.__func__.__code__
        return torch.compile(fresh, backend=self.backend)

    def check_recompile_limit(self, is_main: bool = True, stream: Any = None) -> list[str]:
        """The step functions that reached Dynamo's recompile limit (``torch._dynamo.config.
        recompile_limit`` graphs for one function), where new shapes or values run eagerly from then
        on; one notice per function on the main process (the loop asks at each epoch's end)."""
        limit = torch._dynamo.config.recompile_limit
        full = [name for name, code in self._codes.items() if name not in self._limit_noticed
                and len(torch._C._dynamo.eval_frame._debug_get_cache_entry_list(code)) >= limit]
        for name in full:
            self._limit_noticed.add(name)
            if is_main:
                print(f"arignote: jit: {name} reached torch._dynamo's recompile limit ({limit} graphs): the "
                      "shapes or Python values it sees keep changing (TORCH_LOGS=recompiles says which), "
                      "and what is new runs eagerly from now on. Raise torch._dynamo.config."
                      "recompile_limit, make the shapes fixed, or turn jit off.",
                      file=stream if stream is not None else sys.stderr)
        return full

    @property
    def graphs(self) -> int:
        """Graphs compiled so far by this trainer's steps (train, eval, predict, optimizer)."""
        return self.backend.graphs

    def keep(self, tensor: torch.Tensor) -> torch.Tensor:
        """A step output the loop keeps past the next replay: copied out of a CUDA graph's memory
        (the next replay overwrites it), the tensor itself otherwise."""
        if not self.plan.cudagraphs:
            return tensor
        return torch.utils._pytree.tree_map_only(torch.Tensor, torch.Tensor.clone, tensor)


def announce(plan: JitPlan, notes: list[str], device: torch.device, is_main: bool) -> None:
    """Print the compiled-step line (and its notes) under the banner, on the main process, when the
    ``print_active_device`` flag is on; the notes go to stderr whatever the flag."""
    if not is_main:
        return
    if config.get("print_active_device"):
        print(plan.describe(device))
        sys.stdout.flush()
    for note in notes:
        print(f"arignote: {note}", file=sys.stderr)
