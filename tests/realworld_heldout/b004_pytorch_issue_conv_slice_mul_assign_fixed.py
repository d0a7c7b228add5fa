"""The same model with the fix the maintainers gave: `x[0, :, 0, 0] = x[0, :, 0, 0].clone() * var`, so the multiply saves a copy."""
# outcome: ok
# source: https://github.com/pytorch/pytorch/issues/55980
# repo: pytorch/pytorch
# category: residual
# twin: b003_pytorch_issue_conv_slice_mul_assign.py
import torch


class Model(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = torch.nn.Conv2d(12, 12, 3)
    def forward(self, x, y):
        x = self.conv(x)
        y = self.conv(y)
        var = y.flatten()
        x[0, :, 0, 0] = x[0, :, 0, 0].clone() * var

        loss = torch.mean(x)
        var.register_hook(lambda grad: print('var grad', grad.sum()))
        return loss

model = Model()

x = torch.ones([1, 12, 3, 3]).float()
y = torch.ones([1, 12, 3, 3]).float()
loss = model(x, y)

loss.backward()
