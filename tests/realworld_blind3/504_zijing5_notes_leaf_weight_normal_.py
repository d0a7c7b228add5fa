"""A notebook on in-place operations creates an uninitialised weight vector, sets requires_grad=True on it, then initialises it with w.normal_(): torch refuses the in-place write on a leaf that requires grad."""
# outcome: leaf-error
# source: https://github.com/Zijing5/PyTorch_AboutSomeDetails/blob/e18fcbd4545a457188c8ca4d37dd4d9d43206296/code/5.data%26.detach().ipynb
# repo: Zijing5/PyTorch_AboutSomeDetails
# category: leaf
# twin: 505_zijing5_notes_leaf_weight_normal__fixed.py
# The notebook's cells, in order, as one script (a cell's bare expression printed).
import sys
import torch
from torch import nn

w = torch.FloatTensor(10)
w.requires_grad=True
print(w)
print(w.data)
w.normal_()  # error: IPL002
print(w.data)

x = torch.tensor([1.,3.])
w1 = torch.tensor([[2.],[1.]],requires_grad=True)
w2 = torch.tensor([9.],requires_grad=True)
print(w2.is_leaf)
