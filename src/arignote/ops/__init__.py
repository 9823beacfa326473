"""K's operations (``arignote.backend`` is their face): tensor.py (shapes, math, random), nn.py
(activations, convolutions, losses' kernels), control.py (rnn, switch, in_train_phase), function.py
(``K.function``). They sit above ``layers/`` because a symbolic call builds an ``OpLayer``.

Example::

    >>> from arignote.ops import tensor
    >>> tensor.int_shape(tensor.zeros((2, 3)))
    (2, 3)
"""
