"""Where flag values come from, read as raw text: rc files (INI, ``ARIGNOTERC``), Keras's own
``keras.json``, ``ARIGNOTE_FLAGS`` split into items, and the environment (:func:`environ`, the one
door through which arignote's code reads an environment variable). Nothing here knows a flag: the
registry (:mod:`arignote.config`) maps each raw ``(name, value, where)`` to a flag and parses it.

Example::

    >>> split_flags("device=cuda0,cuda2,floatX=float32")
    ['device=cuda0,cuda2', 'floatX=float32']
"""

from __future__ import annotations

import json
import os
from typing import Any

from arignote.errors import ConfigError

__all__ = ["environ", "split_flags", "rc_paths", "display_path", "read_rc", "read_keras_json"]


def environ(name: str, default: str | None = None) -> str | None:
    """Read an environment variable (the one door through which arignote's own code reads them)."""
    return os.environ.get(name, default)


def split_flags(text: str) -> list[str]:
    """Split ``ARIGNOTE_FLAGS`` on commas; a piece without ``=`` continues the previous value
    (so ``device=cuda0,cuda2,floatX=float32`` keeps the device list together)."""
    items: list[str] = []
    for piece in text.split(","):
        if not piece.strip():
            continue
        if "=" in piece or not items:
            items.append(piece)
        else:
            items[-1] += "," + piece
    return items


def rc_paths() -> list[str]:
    raw = environ("ARIGNOTERC")
    if raw is None:
        return [os.path.expanduser("~/.arignoterc")]
    return [os.path.expanduser(p) for p in raw.split(os.pathsep) if p]


def display_path(path: str) -> str:
    home = os.path.expanduser("~")
    return "~" + path[len(home):] if home and home != "/" and path.startswith(home + os.sep) else path


def read_rc(path: str) -> list[tuple[str, str, str]]:
    """The settings of the rc file at ``path`` as ``(dotted name, raw value, "file:line")``, in file
    order; a file that is not valid INI or cannot be read is a :class:`ConfigError` naming it."""
    shown = display_path(path)
    # why: only an rc file needs the INI parser (the first use of the Keras API reads none, issue 32)
    import configparser

    # inline comments ("preallocate = 0.8   # why") as .theanorc allows; "#" or ";" after a space
    parser = configparser.ConfigParser(interpolation=None, strict=True, inline_comment_prefixes=("#", ";"))
    parser.optionxform = str  # keep floatX's case
    try:
        with open(path, encoding="utf-8") as fh:
            text = fh.read()
        parser.read_string(text, source=shown)
    except configparser.Error as exc:
        line = getattr(exc, "lineno", None)
        first = str(exc).splitlines()[0]
        if line is None and getattr(exc, "errors", None):  # ParsingError: [(lineno, line), ...]
            line = exc.errors[0][0]
            first = f"{text.splitlines()[line - 1].strip()!r} is neither a [section] nor name = value"
        where = f"{shown}:{line}" if line else shown
        raise ConfigError(
            f"rc file {where} is not valid INI ({first}); fix or remove it (ARIGNOTERC lists the files read)"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise ConfigError(f"rc file {shown} cannot be read ({why}); fix it or drop it from ARIGNOTERC") \
            from None
    lines = text.splitlines()
    return [(key if section == "global" else f"{section}.{key}", raw,
             f"{shown}:{_find_line(lines, section, key)}")
            for section in parser.sections() for key, raw in parser.items(section)]


def read_keras_json() -> tuple[Any, str] | None:
    """``(image_data_format, where)`` from Keras's own config (``$KERAS_HOME/keras.json``, default
    ``~/.keras/keras.json``), below arignote's rc files: a Keras user's setting carries over."""
    home = environ("KERAS_HOME") or os.path.join(os.path.expanduser("~"), ".keras")
    path = os.path.join(home, "keras.json")
    if not os.path.exists(path):
        return None
    shown = display_path(path)
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
    except (OSError, ValueError) as exc:
        raise ConfigError(f"{shown} cannot be read as JSON ({exc}); fix or remove it") from None
    if isinstance(data, dict) and "image_data_format" in data:
        return data["image_data_format"], shown
    return None


def _find_line(lines: list[str], section: str, key: str) -> int:
    in_section = False
    for number, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("["):
            in_section = s.strip("[] ") == section
        elif in_section and s.split("=", 1)[0].split(":", 1)[0].strip() == key:
            return number
    return 0
