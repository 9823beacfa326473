"""Every arignote setting, declared once, with where its value came from.

Sources, lowest to highest: defaults < rc files (``ARIGNOTERC``, a colon-separated list, default
``~/.arignoterc``) < ``ARIGNOTE_FLAGS`` < code (:func:`configure`, ``with override(...)``).
This package is the only place that reads arignote's environment variables (:func:`environ`).
The flags are declared here and only here; reading the sources is :mod:`arignote.config.sources`'s,
Theano's spellings :mod:`arignote.config.theano_spellings`' and the checks against this machine
:mod:`arignote.config.machine_checks`'.

Example::

    >>> from arignote import config
    >>> with config.override(device="cpu", memory_preallocate=0.5):
    ...     config.get("memory.preallocate"), config.source("device")
    (0.5, 'code')
"""

from __future__ import annotations

import contextlib
import contextvars
import difflib
import os
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from arignote.config import sources
from arignote.config import types as _t
from arignote.config.machine_checks import machine_error as _machine_error
from arignote.config.machine_checks import set_machine_check
from arignote.config.sources import environ
from arignote.config.theano_spellings import THEANO_ALIASES, THEANO_IGNORED, theano_device
from arignote.errors import ConfigError

__all__ = [
    "ConfigError",
    "Flag",
    "FlagValue",
    "FLAGS",
    "configure",
    "override",
    "get",
    "source",
    "flags",
    "notices",
    "reload",
    "environ",
    "set_machine_check",
    "unchecked",
    "enable_unsafe_deserialization",
]


# --------------------------------------------------------------------------- the registry


@dataclass(frozen=True)
class Flag:
    """One setting: its dotted name, parser (string or Python value -> typed value), default, doc."""

    name: str
    parse: Callable[[Any], Any]
    default: Any
    doc: str
    env: str | None = None  # a dedicated environment variable that may also set it

    @property
    def kind(self) -> str:
        options = getattr(self.parse, "options", None)
        if options:
            return "|".join(options)
        if getattr(self.parse, "kind", None):
            return self.parse.kind
        return {bool: "bool", int: "int", float: "float"}.get(type(self.default), "str")


_FLAG_LIST = [
    Flag("device", _t.device, "auto",
         "where to train: auto, cpu, cuda, cudaN, cuda:N, all, cuda0,cuda2, free:N (gpu/gpuN accepted)"),
    Flag("floatX", _t.choice("float32", "float64", "float16", "bfloat16"), "float32",
         "dtype of parameters and of float inputs"),
    Flag("precision", _t.choice("fp32", "mixed-fp16", "mixed-bf16"), "fp32",
         "mixed precision: autocast to fp16 (with grad scaling) or bf16; fp32 disables it"),
    Flag("memory.preallocate", _t.preallocate, 0.0,
         "0 grow on demand; reserve a size: a fraction (0.8 or 80%) of device memory, 4096 or 4096MiB, "
         "10GiB; x<0 disable caching"),
    Flag("memory.limit", _t.limit, 0.0,
         "cap of torch's caching allocator (tensors and its cache; the CUDA context, NCCL and libraries' "
         "own allocations come on top): 0 none, or a size: a fraction (0.5 or 50%), MiB (8192 or 8192MiB), "
         "8GiB"),
    Flag("memory.host_cache", _t.mib, 1024,
         "MiB of freed host memory malloc keeps for reuse (glibc; fewer page faults on CPU), set once "
         "at the process's first training/inference call; 0 leaves glibc's default; "
         "arignote.devices.release_host_memory() returns it to the OS"),
    Flag("memory.on_oom", _t.choice("split", "raise"), "split",
         "on out-of-memory, redo the step as micro-batches (split) or raise"),
    Flag("memory.oom_inject_above", _t.non_negative(_t.parse_int), 0,
         "testing: raise torch.OutOfMemoryError for micro-batches larger than this (0 off)"),
    Flag("dnn.enabled", _t.choice("auto", "true", "false"), "auto",
         "use cuDNN: auto (when present), true, false"),
    Flag("dnn.benchmark", _t.auto_bool, "auto",
         "let cuDNN time convolution algorithms and keep the fastest: auto (on for a conv model fed "
         "arrays, whose shapes are fixed; off for iterables), true, false"),
    Flag("dnn.deterministic", _t.parse_bool, False, "use only deterministic cuDNN algorithms"),
    Flag("tf32", _t.choice("on", "off", "torch"), "on",
         "TensorFloat-32 for float32 matmuls and convolutions on GPUs of compute capability >= 8.0: on, "
         "off (full fp32), torch (PyTorch's default: convolutions only)"),
    Flag("memory_format", _t.choice("auto", "channels_last", "contiguous"), "auto",
         "memory format of 4-D convolution kernels and a wrapped module's image arrays: auto "
         "(channels_last for conv models), channels_last, contiguous"),
    Flag("optimizer.impl", _t.choice("auto", "fused", "foreach", "loop"), "auto",
         "torch optimizer kernels: auto (fused where torch has one, else foreach on a GPU, the "
         "per-tensor loop on the CPU), fused, foreach, loop"),
    Flag("cpu.threads", _t.non_negative(_t.parse_int), 0,
         "intra-op threads per process (0: torch's default)"),
    Flag("cpu.processes", _t.positive(_t.parse_int), 1,
         "with device=cpu, number of data-parallel CPU processes (gloo)"),
    Flag("print_active_device", _t.parse_bool, True, "print the startup banner on first use (rank 0)"),
    Flag("contexts", _t.text, "", "placement contexts, e.g. dev0->cuda0;dev1->cuda1"),
    Flag("parallel.timeout", _t.non_negative(_t.parse_float), 0.0,
         "seconds a collective waits for a rank (0: PyTorch's defaults, 10 min NCCL, 30 min gloo)"),
    Flag("parallel.restarts", _t.non_negative(_t.parse_int), 0,
         "how many times a failed data-parallel job is restarted (resumes with BackupAndRestore)"),
    Flag("parallel.bucket_view", _t.parse_bool, True,
         "DDP's gradient_as_bucket_view: gradients live in DDP's communication buckets (no copy "
         "in and out of them each step, one gradient-sized buffer less)"),
    Flag("parallel.static_graph", _t.parse_bool, False,
         "DDP's static_graph (the same parameters take part in every step); needs accumulate=1 "
         "and memory.on_oom=raise: DDP fails with static_graph and no_sync (pytorch#143580)"),
    Flag("parallel.find_unused_parameters", _t.parse_bool, False,
         "DDP searches each step's graph for parameters the loss does not use (needed when a "
         "model has such parameters; costs a graph walk per step)"),
    Flag("share.lease_dir", _t.text, "", "directory of GPU lease files (default: <tmp>/arignote-leases)",
         env="ARIGNOTE_LEASE_DIR"),
    Flag("share.status", _t.parse_bool, True,
         "every fit (rank 0) keeps a status record in <lease dir>/runs for `arignote dash` and `smi`"),
    Flag("datasets.dir", _t.text, "", "first directory searched for datasets (default ~/.arignote/datasets)",
         env="ARIGNOTE_DATA"),
    Flag("metrics.names", _t.choice("2.3", "2.2"), "2.3",
         "metric names printed and stored: 2.3 as written in compile (accuracy, mae), 2.2 as Keras "
         "2.0-2.2 (acc, mean_absolute_error); logs and History answer both"),
    Flag("image_data_format", _t.choice("channels_last", "channels_first"), "channels_last",
         "default data_format of image layers (also read from Keras's ~/.keras/keras.json)"),
    Flag("jit", _t.choice("off", "on", "default", "reduce-overhead", "max-autotune",
                          "max-autotune-no-cudagraphs"), "off",
         "compile the train/eval steps with torch.compile: on (reduce-overhead on GPU, default on cpu) "
         "or a torch.compile mode; compile(jit_compile=...) wins"),
    Flag("jit.backend", _t.choice("inductor", "aot_eager", "eager"), "inductor",
         "torch.compile backend of compiled steps: inductor generates kernels; aot_eager/eager to debug"),
    Flag("saving.safe_mode", _t.parse_bool, True,
         "loading a model never runs Python code stored in it (a Keras 2 Lambda's bytecode); false "
         "trusts every file, as enable_unsafe_deserialization() (one call: load_model(safe_mode=False))"),
]

FLAGS: dict[str, Flag] = {f.name: f for f in _FLAG_LIST}


@dataclass(frozen=True)
class FlagValue:
    """A flag's current value and where it came from (``default``, ``~/.arignoterc:3``, ...)."""

    name: str
    value: Any
    source: str
    doc: str
    default: Any
    kind: str


# --------------------------------------------------------------------------- state

_lock_free_state: dict[str, Any] = {"loaded": None, "code": {}, "notices": [], "machine": {}}
_override: contextvars.ContextVar[tuple[dict[str, tuple[Any, str]], ...]] = contextvars.ContextVar(
    "arignote_override", default=()
)
_unchecked: contextvars.ContextVar[bool] = contextvars.ContextVar("arignote_unchecked", default=False)


def _canonical(name: str, where: str) -> str:
    """Map a user's spelling (``memory_preallocate``, ``floatx``, ``gpuarray.preallocate``) to a flag."""
    key = name.strip()
    if key in FLAGS:
        return key
    lowered = {n.lower(): n for n in FLAGS}
    for candidate in (key, key.replace("_", ".", 1), key.replace("__", ".")):
        if candidate.lower() in lowered:
            return lowered[candidate.lower()]
        if candidate.lower() in THEANO_ALIASES:
            return THEANO_ALIASES[candidate.lower()]
    if key.lower() in THEANO_IGNORED:
        return ""
    close = difflib.get_close_matches(key, list(FLAGS), n=1, cutoff=0.6)
    hint = f" Did you mean '{close[0]}'?" if close else " Run 'arignote config' to list the flags."
    raise ConfigError(f"unknown flag '{name}' (from {where}).{hint}")


def _convert(name: str, raw: Any, where: str, notes: list[str]) -> Any:
    flag = FLAGS[name]
    if name == "device" and isinstance(raw, str):
        raw = theano_device(raw, where, notes)
    try:
        value = flag.parse(raw)
    except (ValueError, TypeError) as exc:
        raise ConfigError(f"bad value {raw!r} for flag '{name}' (from {where}): {exc}. {flag.doc}") from None
    if name in ("memory.preallocate", "memory.limit") and 1 < value < 64 and _t.is_bare_number(raw):
        notes.append(f"warning: {name}={raw} (from {where}) is read as {value:g} MiB; write {value:g}GiB "
                     f"if you meant GiB, or {value:g}MiB to keep it")
    return value


def _read_rc(path: str, values: dict[str, tuple[Any, str]], notes: list[str]) -> None:
    for dotted, raw, where in sources.read_rc(path):
        name = _canonical(dotted, where)
        if not name:
            notes.append(f"note: Theano flag '{dotted}' (from {where}) has no meaning in arignote; "
                         "ignored")
            continue
        values[name] = (_convert(name, raw, where, notes), where)


def _load() -> tuple[dict[str, tuple[Any, str]], list[str]]:
    if _lock_free_state["loaded"] is not None:
        return _lock_free_state["loaded"]
    values: dict[str, tuple[Any, str]] = {}
    notes: list[str] = []
    keras_json = sources.read_keras_json()
    if keras_json is not None:
        raw, shown = keras_json
        values["image_data_format"] = (_convert("image_data_format", raw, shown, notes), shown)
    for path in sources.rc_paths():
        if os.path.exists(path):
            _read_rc(path, values, notes)
        elif environ("ARIGNOTERC") is not None:
            notes.append(f"warning: ARIGNOTERC names {sources.display_path(path)}, which does not exist; "
                         "ignored")
    if environ("THEANO_FLAGS"):
        notes.append("warning: THEANO_FLAGS is set but arignote reads ARIGNOTE_FLAGS; run "
                     "'arignote config --from-theano' to convert it (and ~/.theanorc) to ~/.arignoterc")
    for flag in FLAGS.values():
        if flag.env and environ(flag.env):
            values[flag.name] = (_convert(flag.name, environ(flag.env), flag.env, notes), flag.env)
    text = environ("ARIGNOTE_FLAGS", "") or ""
    for item in sources.split_flags(text):
        if "=" not in item:
            raise ConfigError(f"ARIGNOTE_FLAGS item '{item}' is not name=value "
                              "(e.g. device=cuda1,floatX=float32)")
        key, raw = item.split("=", 1)
        name = _canonical(key, "ARIGNOTE_FLAGS")
        if not name:
            notes.append(f"note: Theano flag '{key.strip()}' (from ARIGNOTE_FLAGS) has no meaning here; "
                         "ignored")
            continue
        values[name] = (_convert(name, raw, "ARIGNOTE_FLAGS", notes), "ARIGNOTE_FLAGS")
    _lock_free_state["loaded"] = (values, notes)
    _lock_free_state["machine"] = {}
    for name, (value, where) in values.items():
        error = _machine_error(name, value, where)
        if error is not None:  # raised by the first read that sees this value in effect (see _read)
            _lock_free_state["machine"][name] = error
    for note in notes:
        print(note, file=sys.stderr)
    return values, notes


def _lookup(name: str) -> tuple[Any, str]:
    for layer in reversed(_override.get()):
        if name in layer:
            return layer[name]
    if name in _lock_free_state["code"]:
        return _lock_free_state["code"][name]
    values, _ = _load()
    if name in values:
        return values[name]
    return FLAGS[name].default, "default"


def _code_values(kwargs: Mapping[str, Any]) -> dict[str, tuple[Any, str]]:
    notes: list[str] = []
    out = {}
    for key, raw in kwargs.items():
        name = _canonical(key, "code")
        if not name:
            raise ConfigError(f"flag '{key}' is a Theano flag with no meaning in arignote (from code)")
        out[name] = (_convert(name, raw, "code", notes), "code")
    for note in notes:
        print(note, file=sys.stderr)
    return out


def _in_effect_error() -> ConfigError | None:
    """The machine check's error of an rc / ``ARIGNOTE_FLAGS`` value that is still in effect."""
    for name, error in _lock_free_state["machine"].items():
        if _lookup(name)[1] == error.source:
            return error
    return None


# --------------------------------------------------------------------------- public API


def _read(name: str) -> tuple[Any, str]:
    """The lookup behind the public readers. A bad rc file or ``ARIGNOTE_FLAGS`` is found by the first
    read in the process, whichever it is, and so is a device this machine does not have
    (``device=cuda7`` on a 2-GPU box: checked against the GPU count, no CUDA context made). The
    :class:`ConfigError` (:class:`DeviceError`) carries the whole story (flag, value, source, fix), so
    the registry's own frames are cut from the traceback."""
    try:
        found = _lookup(_canonical(name, "code"))
        problem = _in_effect_error() if _lock_free_state["machine"] and not _unchecked.get() else None
    except ConfigError as exc:
        problem = exc
    if problem is not None:
        raise problem.with_traceback(None) from None  # the message names flag, value, source and fix
    return found


def get(name: str) -> Any:
    """The current value of flag ``name`` (dotted, e.g. ``memory.preallocate``)."""
    return _read(name)[0]


def source(name: str) -> str:
    """Where flag ``name``'s value came from: ``default``, ``path:line``, ``ARIGNOTE_FLAGS``, ``code``."""
    return _read(name)[1]


def configure(**kwargs: Any) -> None:
    """Set flags from code for the rest of the process (highest source but :func:`override`).

    Dotted names may be written with an underscore: ``configure(memory_preallocate=0.8)``. A value
    this machine cannot honour (``configure(device="cuda3")`` on a 2-GPU box) raises here.
    """
    values = _code_values(kwargs)
    for name, (value, where) in values.items():
        error = None if _unchecked.get() else _machine_error(name, value, where)
        if error is not None:
            raise error.with_traceback(None) from None  # the message names flag, value, source and fix
    _lock_free_state["code"].update(values)


@contextlib.contextmanager
def override(**kwargs: Any) -> Iterator[None]:
    """Set flags for the duration of a ``with`` block (tests, one-off runs)."""
    token = _override.set(_override.get() + (_code_values(kwargs),))
    try:
        yield
    finally:
        _override.reset(token)


def flags() -> list[FlagValue]:
    """Every flag with its value, source and doc, in declaration order (what ``arignote config`` prints)."""
    out = []
    for flag in FLAGS.values():
        value, src = _read(flag.name)
        out.append(FlagValue(flag.name, value, src, flag.doc, flag.default, flag.kind))
    return out


def enable_unsafe_deserialization() -> None:
    """Trust every model file for the rest of the process: loading may run Python code stored in a
    file (a Keras 2 ``Lambda``'s bytecode), as Keras 3's ``keras.config.enable_unsafe_deserialization()``.
    Sets the flag ``saving.safe_mode`` to false (source ``code``); for one file prefer
    ``load_model(path, safe_mode=False)``.

    >>> with override(saving_safe_mode=True):
    ...     get("saving.safe_mode")
    True
    """
    configure(saving_safe_mode=False)


@contextlib.contextmanager
def unchecked() -> Iterator[None]:
    """Reads in this block do not raise the machine checks' errors (``device=cuda7`` on a 2-GPU box):
    what ``arignote devices``, ``doctor`` and ``config`` use to show such a flag instead of failing.

    >>> with unchecked():
    ...     isinstance(get("device"), str)
    True
    """
    token = _unchecked.set(True)
    try:
        yield
    finally:
        _unchecked.reset(token)


def notices() -> list[str]:
    """One-line notices produced while reading rc files and ARIGNOTE_FLAGS (Theano spellings, ignored
    flags)."""
    return list(_load()[1])


def reload() -> None:
    """Forget what was read from rc files and the environment and what :func:`configure` set (tests)."""
    _lock_free_state["loaded"] = None
    _lock_free_state["code"] = {}
    _lock_free_state["machine"] = {}
