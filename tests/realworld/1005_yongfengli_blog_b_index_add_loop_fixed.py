"""The blog's fix: each pass adds a one-hot column `bione` out of place, `b = b + bione`, so the `b` that `torch.mm(self.param, b)` saved is never overwritten."""
# outcome: ok
# source: https://www.yongfengli.tk/2018/04/13/inplace-operation-in-pytorch.html
# repo: yongfengli.tk/inplace-operation-in-pytorch
# category: iteration
# twin: 1004_yongfengli_blog_b_index_add_loop.py
import torch
import torch.nn as nn
from torch import zeros
from torch.autograd import Variable


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.param = nn.Parameter(torch.randn(10, 10) * 0.1)

    def forward(self,a):
        b = Variable(torch.Tensor(10,1))
        y = 0
        b = torch.mm(self.param,a)
        for i in range(10):
            bione = zeros(10,1)
            bione[i] = 1
            b = b + bione #out-of-palce operation
            y = y + torch.mm(self.param,b)
        return y


if __name__ == "__main__":
    net = Net()
    a = torch.randn(10, 1)
    y = net(a)
    y.sum().backward()
    print(net.param.grad.norm())
