"""Custom normalization layer keeping running statistics in buffers updated in place under no_grad."""
# outcome: ok
import torch
import torch.nn as nn


class RunningNorm(nn.Module):
    def __init__(self, num_features, momentum=0.1, eps=1e-5):
        super().__init__()
        self.momentum = momentum
        self.eps = eps
        self.register_buffer("running_mean", torch.zeros(num_features))
        self.register_buffer("running_var", torch.ones(num_features))
        self.weight = nn.Parameter(torch.ones(num_features))
        self.bias = nn.Parameter(torch.zeros(num_features))

    def forward(self, x):
        if self.training:
            mean = x.mean(dim=0)
            var = x.var(dim=0, unbiased=False)
            with torch.no_grad():
                self.running_mean.mul_(1 - self.momentum).add_(mean, alpha=self.momentum)
                self.running_var.mul_(1 - self.momentum).add_(var, alpha=self.momentum)
        else:
            mean, var = self.running_mean, self.running_var
        x_hat = (x - mean) / torch.sqrt(var + self.eps)
        return x_hat * self.weight + self.bias


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 6), RunningNorm(6), nn.ReLU(), nn.Linear(6, 1))
    for _ in range(2):
        loss = model(torch.randn(8, 4)).pow(2).mean()
        loss.backward()
