"""keras-core torch backend: core.slice_update writes the updates into the converted input in place (inputs[slices] = updates), so calling it on an input that requires grad writes a view of a leaf."""
# outcome: leaf-error
# source: https://github.com/keras-team/keras-core/pull/405
# repo: keras-team/keras-core
# category: leaf
# twin: b072_keras_core_torch_slice_update_writes_leaf_input_fixed.py
import builtins

import numpy as np
import torch


# keras_core/backend/torch/core.py
def to_torch_dtype(dtype):
    return {"int64": torch.int64, "int32": torch.int32, "float32": torch.float32}[dtype]


def convert_to_tensor(x, dtype=None):
    if isinstance(x, torch.Tensor):
        if dtype is not None:
            return x.to(to_torch_dtype(dtype))
        return x
    return torch.as_tensor(np.asarray(x), dtype=None if dtype is None else to_torch_dtype(dtype))


def slice(inputs, start_indices, shape):
    shape_dtype = to_torch_dtype("int64")
    inputs = convert_to_tensor(inputs)
    start_indices = convert_to_tensor(start_indices).to(shape_dtype)
    shape = convert_to_tensor(shape).to(shape_dtype)

    python_slice = builtins.slice
    slices = [
        python_slice(start_index, start_index + length)
        for start_index, length in zip(start_indices, shape)
    ]
    return inputs[slices]


def slice_update(inputs, start_indices, updates):
    shape_dtype = to_torch_dtype("int64")
    inputs = convert_to_tensor(inputs)
    start_indices = convert_to_tensor(start_indices).to(shape_dtype)
    updates = convert_to_tensor(updates)

    python_slice = builtins.slice
    slices = [
        python_slice(start_index, start_index + update_length)
        for start_index, update_length in zip(start_indices, updates.shape)
    ]
    inputs[slices] = updates  # error: IPL002
    return inputs


# the gradient check the pull request adds: slice_update on tensors that require grad
if __name__ == "__main__":
    inputs = torch.zeros((4, 4), requires_grad=True)
    updates = torch.ones((2, 2), requires_grad=True)
    start_indices = [1, 1]
    outputs = slice_update(inputs, start_indices, updates)
    outputs.sum().backward()
    print(inputs.grad, updates.grad)
