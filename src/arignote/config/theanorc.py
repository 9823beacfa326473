"""Theano users' way in: ``~/.theanorc`` and ``THEANO_FLAGS`` turned into an equivalent ``~/.arignoterc``.

Read as Theano reads them: the files in ``THEANORC`` (default ``~/.theanorc:~/.theanorc.txt``),
then ``THEANO_FLAGS`` (``name=value`` pairs separated by commas) on top. Converted:

=================================================  ==============================================
Theano                                             arignote
=================================================  ==============================================
``device`` (``cpu``, ``cuda``, ``cudaN``, ``gpuN``)  ``device`` (``gpuN`` read as ``cudaN``)
``floatX``                                         ``floatX``
``gpuarray.preallocate``, ``lib.cnmem``            ``memory.preallocate`` (same meaning)
``dnn.enabled`` (``True``/``False``/``auto``)      ``dnn.enabled``
``dnn.conv.algo_*`` = ``time_once``/``time_on_shape_change``  ``dnn.benchmark = true``
``dnn.conv.algo_*`` = ``guess_once``/``guess_on_shape_change``  ``dnn.benchmark = false``
``dnn.conv.algo_*`` = ``deterministic``, ``deterministic = more``  ``dnn.deterministic = true``
``contexts`` (``dev0->cuda0;dev1->cuda1``)         ``contexts``
=================================================  ==============================================

Everything else is listed with the reason it has no equivalent (compilation modes, compilers,
BLAS and nvcc settings: PyTorch runs eagerly with its own kernels).

Example::

    >>> from arignote.config.theanorc import convert
    >>> conv = convert([("device", "gpu1", "THEANO_FLAGS"), ("mode", "FAST_RUN", "THEANO_FLAGS")])
    >>> conv.flags["device"][0], [u.key for u in conv.unconverted]
    ('cuda1', ['mode'])
"""

from __future__ import annotations

import configparser
import os
from dataclasses import dataclass, field

from arignote import config
from arignote.config import sources
from arignote.config.theano_spellings import theano_device
from arignote.errors import ConfigError

__all__ = ["Setting", "Conversion", "read_theano", "convert", "render"]

_NO_EQUIVALENT = {
    "mode": "Theano's compilation mode; PyTorch runs eagerly",
    "optimizer": "Theano's graph optimizer; PyTorch runs eagerly (torch.compile is separate)",
    "linker": "Theano's linker; PyTorch runs eagerly",
    "cxx": "Theano's C++ compiler; PyTorch ships compiled kernels",
    "openmp": "use cpu.threads for the number of CPU threads",
    "allow_gc": "the CUDA caching allocator manages memory; see memory.preallocate",
    "init_gpu_device": "there is no separate init device; device names where training runs",
    "force_device": "a device that cannot be used is always an error in arignote",
    "exception_verbosity": "arignote errors are one message naming the culprit and the fix",
    "warn_float64": "no equivalent warning",
    "compiledir": "nothing is compiled", "base_compiledir": "nothing is compiled",
    "blas.ldflags": "PyTorch ships its own BLAS",
    "gpuarray.sched": "no equivalent scheduling switch",
    "dnn.include_path": "cuDNN comes with the torch wheel",
    "dnn.library_path": "cuDNN comes with the torch wheel",
    "cuda.root": "CUDA comes with the torch wheel",
}


@dataclass(frozen=True)
class Setting:
    """One Theano setting as read: dotted key, value, and where it came from (``file:line`` or env)."""

    key: str
    value: str
    origin: str
    reason: str = ""  # why it was not converted


@dataclass
class Conversion:
    """Result of :func:`convert`: arignote flag -> (value, comment) and the settings left out."""

    flags: dict[str, tuple[str, str]] = field(default_factory=dict)
    unconverted: list[Setting] = field(default_factory=list)


def _theanorc_paths() -> list[str]:
    raw = config.environ("THEANORC")
    paths = raw.split(os.pathsep) if raw is not None else ["~/.theanorc", "~/.theanorc.txt"]
    return [os.path.expanduser(p) for p in paths if p]


def read_theano() -> list[tuple[str, str, str]]:
    """``(key, value, origin)`` from the Theano rc files then ``THEANO_FLAGS``, in reading order."""
    out: list[tuple[str, str, str]] = []
    for path in _theanorc_paths():
        if not os.path.isfile(path):
            continue
        parser = configparser.ConfigParser(interpolation=None, inline_comment_prefixes=("#", ";"))
        parser.optionxform = str
        try:
            parser.read(path, encoding="utf-8")
        except (configparser.Error, UnicodeDecodeError) as exc:
            raise ConfigError(f"{path} is not a readable Theano rc file ({str(exc).splitlines()[0]}); "
                              "fix it or point THEANORC elsewhere") from None
        shown = sources.display_path(path)
        for section in parser.sections():
            for key, value in parser.items(section):
                out.append((key if section == "global" else f"{section}.{key}", value, shown))
    for item in (config.environ("THEANO_FLAGS") or "").split(","):
        if item.strip():
            key, sep, value = item.partition("=")
            if not sep:
                raise ConfigError(f"THEANO_FLAGS item {item!r} is not name=value")
            out.append((key.strip(), value.strip(), "THEANO_FLAGS"))
    return out


def _target(key: str, value: str) -> tuple[str, str] | str:
    """``(flag, value)`` for a convertible Theano setting, else the reason it has none."""
    low = value.strip().lower()
    if key == "device":
        if low.startswith("opencl"):
            return "OpenCL devices are not supported (PyTorch runs on CUDA or the CPU)"
        return "device", value
    if key.lower() == "floatx":
        return "floatX", value
    if key in ("gpuarray.preallocate", "lib.cnmem"):
        return "memory.preallocate", value
    if key == "dnn.enabled":
        mapped = {"true": "true", "false": "false", "auto": "auto", "no_check": "true"}.get(low)
        return ("dnn.enabled", mapped) if mapped else f"dnn.enabled={value} is not True, False or auto"
    if key.startswith("dnn.conv.algo_"):
        if low in ("time_once", "time_on_shape_change"):
            return "dnn.benchmark", "true"
        if low in ("guess_once", "guess_on_shape_change"):  # cuDNN's heuristics, no timing
            return "dnn.benchmark", "false"
        if low == "deterministic":
            return "dnn.deterministic", "true"
        return (f"cuDNN picks algorithms itself (dnn.benchmark=auto times them for fixed shapes, true "
                f"always); {value} has no switch")
    if key == "deterministic":
        return ("dnn.deterministic", "true") if low == "more" else "Theano's default is arignote's default"
    if key == "contexts":
        return "contexts", value
    return _NO_EQUIVALENT.get(key, "no arignote flag does this")


def convert(settings: list[tuple[str, str, str]]) -> Conversion:
    """Map Theano settings (later ones win, as in Theano) onto arignote flags; values are checked
    with the flags' own parsers, so a bad Theano value is listed instead of written."""
    conv = Conversion()
    for key, value, origin in settings:
        target = _target(key, value)
        if isinstance(target, str):
            conv.unconverted.append(Setting(key, value, origin, target))
            continue
        name, text = target
        if name == "device":
            text = theano_device(text, origin, [])
        try:
            config.FLAGS[name].parse(text)
        except (TypeError, ValueError) as exc:
            conv.unconverted.append(Setting(key, value, origin, f"not a valid {name}: {exc}"))
            continue
        conv.flags[name] = (text, f"{origin}: {key} = {value}")
    return conv


def render(conv: Conversion) -> str:
    """The ``~/.arignoterc`` text: one section per flag group, each line's Theano origin as a comment,
    then the settings with no equivalent as comments."""
    lines = ["# written by 'arignote config --from-theano' from ~/.theanorc and THEANO_FLAGS"]
    sections: dict[str, list[str]] = {}
    for name, (value, why) in conv.flags.items():
        section, _, key = name.rpartition(".")
        sections.setdefault(section or "global", []).append(f"{key or name} = {value}    # {why}")
    for section, entries in sections.items():
        lines += ["", f"[{section}]", *entries]
    if conv.unconverted:
        lines += ["", "# no equivalent in arignote (left out):"]
        lines += [f"#   {s.key} = {s.value} ({s.origin}): {s.reason}" for s in conv.unconverted]
    return "\n".join(lines) + "\n"
