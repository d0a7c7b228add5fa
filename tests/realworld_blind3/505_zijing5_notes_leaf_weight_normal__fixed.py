"""The same notebook cells with the initialisation the notebook uses next: w.data.normal_() writes through .data, outside autograd, and the leaf keeps requires_grad."""
# outcome: ok
# source: https://github.com/Zijing5/PyTorch_AboutSomeDetails/blob/e18fcbd4545a457188c8ca4d37dd4d9d43206296/code/5.data%26.detach().ipynb
# repo: Zijing5/PyTorch_AboutSomeDetails
# category: leaf
# twin: 504_zijing5_notes_leaf_weight_normal_.py
# The notebook's cells, in order, as one script (a cell's bare expression printed).
import sys
import torch
from torch import nn

w = torch.FloatTensor(10)
w.requires_grad=True
print(w)
print(w.data)
w.data.normal_()
print(w.data)

x = torch.tensor([1.,3.])
w1 = torch.tensor([[2.],[1.]],requires_grad=True)
w2 = torch.tensor([9.],requires_grad=True)
print(w2.is_leaf)
