"""A griffe extension for the docs site (mkdocs.yml): the public faces as Python sees them.

Griffe reads modules statically. Two idioms of ours escape it: an ``__all__`` computed from other
names (``arignote.backend``: ``[*TENSOR_FUNCTIONS, ...]``, ``arignote.devices``: ``sorted(_NAMES)``;
griffe warns, a failure under ``mkdocs build --strict``, or sees none) and lazy namespaces
(``arignote.callbacks``, ``arignote.devices``: names imported on first use by a module ``__getattr__``,
so griffe sees no member). For such a module this imports it (a public face: importing it runs no user
code) and takes its computed ``__all__``, and adds each exported name
griffe does not see as an alias of the object's defining path (``obj.__module__`` + ``__qualname__``).

Docstrings hold doctests (``>>> x`` then the output) at their left margin; Markdown would read an output
line such as ``[2.0, 2.0]`` after ``...[-1]`` as a link reference. Such a run of lines, up to the next
blank line, is fenced as a ``pycon`` block (a doctest indented under ``Example::`` already is code).
The docstrings' few reST spellings read as Markdown: ``:class:`Model``` as ``Model`` in code, and
``Example::`` as ``Example:``.
"""

from __future__ import annotations

import importlib
import re
from typing import Any

import griffe


def fence_doctests(text: str) -> str:
    r"""``>>>`` runs at the left margin fenced as ``pycon`` code.

    >>> fence_doctests("Sum:\n>>> 1 + 1\n2\n\nDone.").splitlines()
    ['Sum:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'Done.']
    """
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        if not inside and line.startswith(">>>"):
            out.extend(["", "```pycon"] if out and out[-1].strip() else ["```pycon"])
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line)
    if inside:
        out.append("```")
    return "\n".join(out)


_ROLE = re.compile(r":(?:class|func|meth|mod|attr|data|exc|obj):`~?([^`]+)`")


def markdown_docstring(text: str) -> str:
    r"""A docstring as Markdown: reST roles as code, ``Example::`` as ``Example:``, doctests fenced.

    >>> markdown_docstring("See :class:`Model`.\n\nExample::\n\n    >>> 1\n    1")
    'See `Model`.\n\nExample:\n\n    >>> 1\n    1'
    """
    text = _ROLE.sub(r"`\1`", text)
    text = re.sub(r"(?m)(\S)::$", r"\1:", text)
    return fence_doctests(text) if ">>>" in text else text


class PublicFaces(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = markdown_docstring(obj.docstring.value)

    def on_module_members(self, *, mod: griffe.Module, **kwargs: Any) -> None:
        if mod.exports is None and "__all__" not in mod.members:
            return
        written = mod.members["__all__"].value if "__all__" in mod.members else None
        computed = not isinstance(written, (griffe.ExprList, griffe.ExprTuple)) or not all(
            isinstance(name, str) for name in mod.exports or ())
        missing = [name for name in mod.exports or () if isinstance(name, str) and name not in mod.members]
        if not computed and not missing:
            return
        module = importlib.import_module(mod.path)
        if computed:
            mod.exports = list(module.__all__)
        for name in mod.exports:
            if name in mod.members:
                continue
            obj = getattr(module, name)
            where, qualname = getattr(obj, "__module__", None), getattr(obj, "__qualname__", None)
            if where and qualname and where != mod.path:
                mod.set_member(name, griffe.Alias(name, f"{where}.{qualname}", parent=mod))
