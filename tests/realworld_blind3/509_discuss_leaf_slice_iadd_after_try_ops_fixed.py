"""The same forum snippet with the writes run under torch.no_grad(), the standard way to change a leaf that requires grad in place: autograd records none of them and c stays a leaf."""
# outcome: ok
# source: https://discuss.pytorch.org/t/inplace-operation-changes-is-leaf-attribute/120297
# repo: discuss.pytorch.org/120297
# category: leaf
# twin: 508_discuss_leaf_slice_iadd_after_try_ops.py
# The question's snippet, its writes moved under torch.no_grad().
import torch

c = torch.randn(10, 3, 2, 32, requires_grad=True)
print(c.is_leaf)
with torch.no_grad():
    # operation 1
    try:
        c += 1 # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
    except RuntimeError:
        print(RuntimeError)
    # operation 2
    try:
        torch.add(c, 1, out=c) # RuntimeError: add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad. Grad will not be copied (only data will be copied).
    except RuntimeError:
        print(RuntimeError)
    # operation 3
    try:
        c.add_(1) # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
    except RuntimeError:
        print(RuntimeError)
    # operation 4
    try:
        c.index_copy_(3, torch.tensor(10), torch.randn(10, 3, 2, 1)) # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.
    except RuntimeError:
        print(RuntimeError)
    # operation 5
    d = c.detach()
    d += 1 # no error, and still leaf
    print(c.is_leaf)
    # operation 6
    c[:] += 1 # no error, but not leaf anymore
    print(c.is_leaf)
