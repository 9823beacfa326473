"""The optimizer as ``torch.amp.GradScaler.step`` sees it under ``mixed-fp16`` (:class:`ScalerView`):
the torch param groups to unscale, a ``step`` that runs the arignote optimizer, and a fused kernel's
skip of a step with non-finite gradients without a host read.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ScalerView"]


class ScalerView:
    """What ``GradScaler.step`` needs of an optimizer: the torch param groups to unscale, and a
    ``step`` that runs the arignote optimizer (clipping, decay, iteration count).

    With a fused torch optimizer (Adam/AdamW/SGD with ``fused=True``, which set
    ``_step_supports_amp_scaling``) the view says so too: ``GradScaler.step`` then hands it the
    device tensor ``found_inf`` instead of reading it on the host, and the fused kernel skips the
    update itself, so a ``mixed-fp16`` step has no host sync. A skipped step still counts in the
    arignote optimizer's ``iterations`` (its ``decay`` schedule advances, as a torch ``LRScheduler``
    stepped every iteration does); torch's own step count is restored by the kernel. Other
    optimizers (RMSprop, Adadelta, ...) keep GradScaler's host read of ``found_inf`` each step.

    >>> import torch
    >>> from arignote.optimizers import Adam
    >>> w = torch.nn.Parameter(torch.ones(2)); opt = Adam(); _ = opt.build([w])
    >>> ScalerView(opt)._step_supports_amp_scaling == bool(opt.torch.defaults.get("fused"))
    True
    >>> ScalerView(opt, torch_step=print)._step_supports_amp_scaling  # a traced update: host path
    False
    """

    def __init__(self, optimizer: Any, torch_step: Any = None, fused_update: bool = False) -> None:
        self.optimizer, self.torch_step = optimizer, torch_step
        self.param_groups = optimizer.torch.param_groups
        self.state = optimizer.torch.state
        # a compiled torch_step that traces the optimizer does so without GradScaler's attributes (host
        # path); one that runs torch's fused kernel as it is (``fused_update``) takes them as eager does
        self._step_supports_amp_scaling = (torch_step is None or fused_update) and bool(
            getattr(optimizer.torch, "_step_supports_amp_scaling", False))

    def step(self) -> None:
        found_inf = getattr(self, "found_inf", None)  # set (and deleted) by GradScaler.step: fused path
        if found_inf is None:
            self.optimizer.step(self.torch_step)
            return
        fused = self.optimizer.torch
        fused.grad_scale, fused.found_inf = getattr(self, "grad_scale", None), found_inf
        try:
            self.optimizer.step(self.torch_step)
        finally:
            del fused.grad_scale, fused.found_inf
