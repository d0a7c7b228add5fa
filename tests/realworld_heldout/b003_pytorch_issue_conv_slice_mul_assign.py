"""A model that rewrites a channel slice of its conv output with `x[0, :, 0, 0] = x[0, :, 0, 0] * var`: the multiply saved the slice it then overwrites."""
# outcome: inplace-error
# source: https://github.com/pytorch/pytorch/issues/55980
# repo: pytorch/pytorch
# category: residual
# twin: b004_pytorch_issue_conv_slice_mul_assign_fixed.py
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(12, 12, 3)
    def forward(self, x, y):
        x = self.conv(x)
        y = self.conv(y)
        var = y.flatten()
        x[0, :, 0, 0] = x[0, :, 0, 0] * var  # error: IPL001  # saved-by

        loss = torch.mean(x)
        var.register_hook(lambda grad: print('var grad', grad.sum()))
        return loss

model = Model()

x = torch.ones([1, 12, 3, 3]).float()
y = torch.ones([1, 12, 3, 3]).float()
loss = model(x, y)

loss.backward()
