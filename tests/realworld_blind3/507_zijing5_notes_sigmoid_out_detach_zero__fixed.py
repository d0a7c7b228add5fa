"""The same notebook cells with the detached copy cloned before it is zeroed: c = out.detach().clone() no longer shares the storage of the sigmoid output, so the backward finds the saved output untouched."""
# outcome: ok
# source: https://github.com/Zijing5/PyTorch_AboutSomeDetails/blob/e18fcbd4545a457188c8ca4d37dd4d9d43206296/code/5.data%26.detach().ipynb
# repo: Zijing5/PyTorch_AboutSomeDetails
# category: residual
# twin: 506_zijing5_notes_sigmoid_out_detach_zero_.py
# The notebook's cells, in order, as one script (a cell's bare expression printed).
import sys
import torch
from torch import nn

a = torch.tensor([1.,2.,3.], requires_grad=True)
out = a.sigmoid()
out.sum().backward()

a = torch.tensor([1.,2.,3.], requires_grad=True)
out = a.sigmoid()
c = out.detach().clone() #.detach()也是共享同一个内存
c.zero_() # out==zero
print(out, c, a.requires_grad, out.requires_grad,c.requires_grad) # 只复制数据，不保留梯度传播路径
out.sum().backward()
print(a.grad)
