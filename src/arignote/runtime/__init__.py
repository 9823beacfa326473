"""The flags applied to this process's devices: ``setup`` (choose and prepare the devices the
``device`` flag names), ``memory`` (the memory policy), ``precision`` (floatX and mixed precision).
``devices/`` knows the machine and reads no flag; this package reads them and calls down. Importing
this package loads nothing (``runtime.memory`` is torch-free).

Example::

    >>> from arignote.runtime import memory
    >>> memory.__name__
    'arignote.runtime.memory'
"""
