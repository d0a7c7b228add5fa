"""Temperature sharpening written through .data on the saved softmax output: torch raises nothing, the gradient is silently wrong."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


class SoftRouter(nn.Module):
    def __init__(self, dim, n_experts):
        super().__init__()
        self.gate = nn.Linear(dim, n_experts)
        self.experts = nn.Linear(dim, dim * n_experts)
        self.n_experts = n_experts

    def forward(self, x):
        weights = F.softmax(self.gate(x), dim=-1)  # saved-by
        weights.data.pow_(2)  # warning: IPL005
        outs = self.experts(x).view(x.shape[0], self.n_experts, -1)
        return (weights.unsqueeze(-1) * outs).sum(1)


def run() -> None:
    torch.manual_seed(0)
    router = SoftRouter(4, 3)
    loss = router(torch.randn(5, 4)).pow(2).mean()
    loss.backward()
