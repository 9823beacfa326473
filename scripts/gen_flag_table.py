"""Write the flag table of docs/configuration.md from the flag registry (``arignote.config.FLAGS``).

The table sits between two markers in the page; everything else on the page is written by hand:

    <!-- flags:begin -->
    <!-- flags:end -->

``python scripts/gen_flag_table.py`` rewrites it (``make docs`` does, first); ``--check`` only says
whether the committed table is the registry's (exit 1 and the fix when not). tests/test_docs_flags.py
fails when the table is stale or a flag has no doc.

Example::

    >>> from arignote import config
    >>> row(config.FLAGS["memory.preallocate"]).split(" | ")[3]
    '`[memory] preallocate` · Theano: `gpuarray.preallocate`, `lib.cnmem`'
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from arignote import config
from arignote.config.theano_spellings import THEANO_ALIASES

PAGE = Path(__file__).resolve().parent.parent / "docs" / "configuration.md"
BEGIN = "<!-- flags:begin -->"
END = "<!-- flags:end -->"
HEADER = ("Every flag is set in an rc file (`~/.arignoterc`, the section and key below), in `ARIGNOTE_FLAGS` "
          "as `name=value` (`ARIGNOTE_FLAGS=memory.preallocate=0.8,floatX=float32`), or from code with "
          "`arignote.configure(memory_preallocate=0.8)`; `arignote config` prints each one's value and "
          "where it came from.\n\n"
          "| flag | type | default | rc file · other spellings | meaning |\n"
          "| --- | --- | --- | --- | --- |")


def shown_default(value: object) -> str:
    """The default as a user writes it: ``true``, ``0.8``, ``""`` for an empty text."""
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, float):
        return f"{value:g}"
    return str(value) if value != "" else '""'


def escape(text: str) -> str:
    """Markdown table cell text: no HTML tags (``<tmp>``), no cell breaks; code spans kept."""
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;").replace("|", "\\|")


def where_to_set(flag: config.Flag) -> str:
    section, _, key = flag.name.rpartition(".")
    places = [f"`[{section or 'global'}] {key}`"]
    if flag.env:
        places.append(f"environment: `{flag.env}`")
    theano = sorted(alias for alias, name in THEANO_ALIASES.items()
                    if name == flag.name and not alias.startswith("global."))
    if theano:
        places.append("Theano: " + ", ".join(f"`{alias}`" for alias in theano))
    return " · ".join(places)


def row(flag: config.Flag) -> str:
    kind = ", ".join(f"`{option}`" for option in flag.kind.split("|"))
    cells = [f"`{flag.name}`", kind, f"`{shown_default(flag.default)}`", where_to_set(flag), escape(flag.doc)]
    return "| " + " | ".join(cells) + " |"


def table() -> str:
    missing = [name for name, flag in config.FLAGS.items() if len(flag.doc.split()) < 3]
    if missing:
        raise SystemExit(f"flags without a doc in config.py: {', '.join(missing)}; give each a one-line doc")
    return "\n".join([HEADER, *(row(flag) for flag in config.FLAGS.values())])


def render(page: str) -> str:
    """``page`` with the text between the markers replaced by the registry's table."""
    if page.count(BEGIN) != 1 or page.count(END) != 1 or page.index(BEGIN) > page.index(END):
        raise SystemExit(f"{PAGE.name} needs the two markers, once each, in this order:\n{BEGIN}\n{END}")
    head, rest = page.split(BEGIN)
    _, tail = rest.split(END)
    return f"{head}{BEGIN}\n{table()}\n{END}{tail}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the committed table is stale")
    args = parser.parse_args(argv)
    page = PAGE.read_text(encoding="utf-8")
    fresh = render(page)
    if args.check:
        if fresh != page:
            print(f"{PAGE} is stale: run python scripts/gen_flag_table.py", file=sys.stderr)
            return 1
        return 0
    if fresh != page:
        PAGE.write_text(fresh, encoding="utf-8")
        print(f"wrote the flag table of {PAGE} ({len(config.FLAGS)} flags)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
