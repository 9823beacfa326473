"""The package version, on the ground floor so that any module can name it without importing
the package's ``__init__`` (the banner's first line does).

Example::

    >>> from arignote._version import __version__
    >>> __version__
    '0.1.0'
"""

__version__ = "0.1.0"  # the same as pyproject.toml's [project] version
