"""A forum question tries several in-place writes on a leaf that requires grad, each refused one inside try/except, then writes c[:] += 1 outside any try (which, on the torch of the post, ran and turned c into a non-leaf); current torch refuses that write on a view of the leaf too."""
# outcome: leaf-error
# source: https://discuss.pytorch.org/t/inplace-operation-changes-is-leaf-attribute/120297
# repo: discuss.pytorch.org/120297
# category: leaf
# twin: 509_discuss_leaf_slice_iadd_after_try_ops_fixed.py
# The question's snippet, as posted.
import torch

c = torch.randn(10, 3, 2, 32, requires_grad=True)
print(c.is_leaf)
# operation 1
try:
    c += 1 # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.  # error: IPL002
except RuntimeError:
    print(RuntimeError)
# operation 2
try:
    torch.add(c, 1, out=c) # RuntimeError: add(): functions with out=... arguments don't support automatic differentiation, but one of the arguments requires grad. Grad will not be copied (only data will be copied).
except RuntimeError:
    print(RuntimeError)
# operation 3
try:
    c.add_(1) # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.  # error: IPL002
except RuntimeError:
    print(RuntimeError)
# operation 4
try:
    c.index_copy_(3, torch.tensor(10), torch.randn(10, 3, 2, 1)) # RuntimeError: a leaf Variable that requires grad is being used in an in-place operation.  # error: IPL002
except RuntimeError:
    print(RuntimeError)
# operation 5
d = c.detach()
d += 1 # no error, and still leaf
print(c.is_leaf)
# operation 6
c[:] += 1 # no error, but not leaf anymore  # error: IPL002
print(c.is_leaf)
