"""K's operations (``arignote.backend`` is their face). tensor.py is the face of the tensor functions:
elementwise.py, reductions.py, reshaping.py (and products), queries.py (shapes, dtypes, kinds),
learning_phase.py (switch, in_train_phase, dropout), crossentropy.py, variables.py (variables,
constants, random tensors, placeholders), their arguments in arguments.py; nn.py is the face of the
neural-network functions: convolutions.py, pooling.py, resizing.py, padding.py, normalization.py,
their checks in image_arguments.py; control.py (rnn, map_fn, CTC), function.py (``K.function``).
They sit above ``layers/`` because a symbolic call builds an ``OpLayer``.

Example::

    >>> from arignote.ops import tensor
    >>> tensor.int_shape(tensor.zeros((2, 3)))
    (2, 3)
"""
