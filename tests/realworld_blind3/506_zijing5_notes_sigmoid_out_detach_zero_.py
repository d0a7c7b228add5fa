"""A notebook on .data and .detach(): out = a.sigmoid(), then c = out.detach() and c.zero_() -- the detached tensor shares out's storage, so the zeroing bumps the version of the output sigmoid saved, and out.sum().backward() fails."""
# outcome: inplace-error
# source: https://github.com/Zijing5/PyTorch_AboutSomeDetails/blob/e18fcbd4545a457188c8ca4d37dd4d9d43206296/code/5.data%26.detach().ipynb
# repo: Zijing5/PyTorch_AboutSomeDetails
# category: residual
# twin: 507_zijing5_notes_sigmoid_out_detach_zero__fixed.py
# The notebook's cells, in order, as one script (a cell's bare expression printed).
import sys
import torch
from torch import nn

a = torch.tensor([1.,2.,3.], requires_grad=True)
out = a.sigmoid()
out.sum().backward()

a = torch.tensor([1.,2.,3.], requires_grad=True)
out = a.sigmoid()  # saved-by
c = out.detach() #.detach()也是共享同一个内存
c.zero_() # out==zero  # error: IPL005
print(out, c, a.requires_grad, out.requires_grad,c.requires_grad) # 只复制数据，不保留梯度传播路径
out.sum().backward()
print(a.grad)
