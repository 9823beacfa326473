"""The weights a recurrent cell hands torch's fused kernel (``torch.lstm`` / ``torch.gru`` /
``torch.rnn_*``): ``[weight, recurrent_weight(, input bias, recurrent bias)]``. On a GPU they are
flattened once into the one contiguous chunk cuDNN reads in place (again when a move or a load gives
a weight new memory); a bias holding both rows (GRU ``reset_after``, the CuDNN layers) is re-pointed
onto that chunk. On a CPU they are the cell's tensors as they are.

Example::

    >>> from arignote.layers.recurrent.cells import LSTMCell
    >>> cell = LSTMCell(2); cell.build((3,))
    >>> [tuple(p.shape) for p in cell._fused_params("LSTM")]
    [(8, 3), (8, 2), (8,), (8,)]
"""

from __future__ import annotations

import torch

from arignote.devices import cuda

__all__ = ["FusedWeights"]


def _on_cudnn(weight: torch.Tensor) -> bool:
    """Whether torch's fused RNN kernel runs cuDNN for ``weight`` (a CUDA tensor; cuDNN's own checks
    are in ``cuda.flatten_rnn_weights``)."""
    return weight.is_cuda


class FusedWeights:
    """The fused kernel's weights of a cell (a mixin of :class:`~arignote.layers.recurrent.cell_base._Cell`:
    it reads the cell's ``weight``, ``recurrent_weight``, ``bias``, ``use_bias`` and ``units``)."""

    def _fused_params(self, mode: str) -> list[torch.Tensor]:
        """``[weight, recurrent_weight(, input bias, recurrent bias)]`` for torch's fused kernel. On a
        GPU they are kept in one contiguous chunk cuDNN reads in place (flattened once, and again
        when a move or a load gives a weight new memory): separate tensors made cuDNN copy every
        weight at every forward (issue 28 S3). The CPU path is unchanged."""
        params = [self.weight, self.recurrent_weight, *self._fused_biases()]
        if not _on_cudnn(self.weight):
            return params
        ptrs = tuple(p.data_ptr() for p in params)
        if ptrs != self.__dict__.get("_flat_ptrs") and not torch.compiler.is_compiling():
            if self._flatten(params, mode):
                params = [self.weight, self.recurrent_weight, *self._fused_biases()]
                self.__dict__["_flat_ptrs"] = tuple(p.data_ptr() for p in params)
        return params

    def _fused_biases(self) -> list[torch.Tensor]:
        """One Keras bias: itself and a zero recurrent bias (kept on a GPU, fresh on a CPU)."""
        if not self.use_bias:
            return []
        if not _on_cudnn(self.weight):
            return [self.bias, torch.zeros_like(self.bias)]
        zero = self.__dict__.get("_zero_recurrent_bias")
        if zero is None or zero.device != self.bias.device or zero.dtype != self.bias.dtype:
            zero = self.__dict__["_zero_recurrent_bias"] = torch.zeros_like(self.bias)
        return [self.bias, zero]

    def _flatten(self, params: list[torch.Tensor], mode: str) -> bool:
        return self._flatten_weights(params, mode)

    def _flatten_weights(self, params: list[torch.Tensor], mode: str) -> bool:
        return cuda.flatten_rnn_weights(params, mode, self.weight.shape[1], self.units)

    def _bias_rows(self) -> tuple[torch.Tensor, torch.Tensor]:
        """A bias holding input then recurrent bias (GRU ``reset_after``, CuDNN layers): the two rows."""
        b = self.bias
        return (b[0], b[1]) if b.dim() == 2 else (b[: b.numel() // 2], b[b.numel() // 2:])

    def _flatten_split_bias(self, params: list[torch.Tensor], mode: str) -> bool:
        """:meth:`_flatten` where both biases are rows of one parameter: torch re-points the tensors it
        is given, so it gets stand-ins for the rows, and the bias parameter is then re-pointed onto
        them (rows ``gap`` apart in the buffer: cuDNN checks only where each tensor starts)."""
        if not self.use_bias:
            return self._flatten_weights(params, mode)
        b_ih, b_hh = (b.detach().clone() for b in params[2:])
        if not self._flatten_weights([*params[:2], b_ih, b_hh], mode):
            return False
        n = b_ih.numel()
        gap = (b_hh.data_ptr() - b_ih.data_ptr()) // b_ih.element_size()
        if self.bias.dim() == 2 and gap >= n:
            size, stride = (2, n), (gap, 1)
        elif gap == n:
            size, stride = (2 * n,), (1,)
        else:  # not seen in cuDNN's layout; the bias then stays apart (cuDNN copies, and warns)
            return True
        with torch.no_grad():
            self.bias.set_(b_ih.untyped_storage(), b_ih.storage_offset(), size, stride)
        return True
