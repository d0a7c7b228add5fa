"""The blog's forward: `b = torch.mm(self.param, a)`, then a loop writes `b[i] = b[i] + 1` in place while each pass also feeds `b` to `torch.mm(self.param, b)`, which saved it for backward."""
# outcome: inplace-error
# source: https://www.yongfengli.tk/2018/04/13/inplace-operation-in-pytorch.html
# repo: yongfengli.tk/inplace-operation-in-pytorch
# category: iteration
# twin: 1005_yongfengli_blog_b_index_add_loop_fixed.py
import torch
import torch.nn as nn
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
            b[i] = b[i] + 1 #inpalce operation  # error: IPL001
            y = y + torch.mm(self.param,b)  # saved-by
        return y


if __name__ == "__main__":
    net = Net()
    a = torch.randn(10, 1)
    y = net(a)
    y.sum().backward()
    print(net.param.grad.norm())
