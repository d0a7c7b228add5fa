"""StyleGAN-style path length penalty: a running mean kept in parameters made with requires_grad=False is divided by a float ctor argument's power, then updated in place after the loss is built."""
# outcome: ok
import math

import torch
from torch import nn


class PathLengthPenalty(nn.Module):
    def __init__(self, beta: float):
        super().__init__()
        self.beta = beta
        self.steps = nn.Parameter(torch.tensor(0.0), requires_grad=False)
        self.exp_sum_a = nn.Parameter(torch.tensor(0.0), requires_grad=False)

    def forward(self, w: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
        image_size = x.shape[2] * x.shape[3]
        y = torch.randn(x.shape)
        output = (x * y).sum() / math.sqrt(image_size)
        (gradients,) = torch.autograd.grad(outputs=output, inputs=w, create_graph=True)
        norm = (gradients**2).sum(dim=2).mean(dim=1).sqrt()
        if self.steps > 0:
            a = self.exp_sum_a / (1 - self.beta**self.steps)
            loss = torch.mean((norm - a) ** 2)
        else:
            loss = norm.new_tensor(0)
        mean = norm.mean().detach()
        self.exp_sum_a.mul_(self.beta).add_(mean, alpha=1 - self.beta)
        self.steps.add_(1.0)
        return loss


def run() -> None:
    torch.manual_seed(0)
    penalty = PathLengthPenalty(0.99)
    synthesis = nn.Linear(4, 2 * 3 * 3)
    for _ in range(3):
        w = torch.randn(2, 5, 4, requires_grad=True)
        images = torch.tanh(synthesis(w.mean(dim=1))).view(2, 2, 3, 3)
        loss = images.mean() + penalty(w, images)
        loss.backward()
