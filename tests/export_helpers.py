"""Models the export tests share."""

from __future__ import annotations

import numpy as np


def small_mobilenet():
    """MobileNet (depthwise separable convolutions, ReLU(6), BatchNormalization, ZeroPadding2D) at 32x32, its
    weights moved off their initial values (moving variances of 0.06, as a trained net's, so the signal does
    not fade through 27 BatchNormalizations) so that the output depends on the input."""
    from arignote.applications import MobileNet

    model = MobileNet(input_shape=(32, 32, 3), alpha=0.25, weights=None, classes=5)
    rng = np.random.default_rng(0)
    for layer in model.layers:
        weights = layer.get_weights()
        if type(layer).__name__ == "BatchNormalization":
            gamma, beta, mean, var = weights
            layer.set_weights([gamma, beta + 0.1, mean, np.full_like(var, 0.06)])
        elif weights:
            layer.set_weights([w + rng.normal(0, 0.05, w.shape).astype(w.dtype) for w in weights])
    return model
