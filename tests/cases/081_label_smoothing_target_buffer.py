"""Annotated-Transformer LabelSmoothing: the target distribution is built in place on a fresh tensor with no grad."""
# outcome: ok
import torch
import torch.nn as nn


class LabelSmoothing(nn.Module):
    def __init__(self, size, padding_idx, smoothing=0.0):
        super().__init__()
        self.criterion = nn.KLDivLoss(reduction="sum")
        self.padding_idx = padding_idx
        self.confidence = 1.0 - smoothing
        self.smoothing = smoothing
        self.size = size
        self.true_dist = None

    def forward(self, x, target):
        assert x.size(1) == self.size
        true_dist = x.data.clone()
        true_dist.fill_(self.smoothing / (self.size - 2))
        true_dist.scatter_(1, target.data.unsqueeze(1), self.confidence)
        true_dist[:, self.padding_idx] = 0
        mask = torch.nonzero(target.data == self.padding_idx)
        if mask.dim() > 0:
            true_dist.index_fill_(0, mask.squeeze(), 0.0)
        self.true_dist = true_dist
        return self.criterion(x, true_dist.clone().detach())


def run() -> None:
    torch.manual_seed(0)
    generator = nn.Sequential(nn.Linear(6, 5), nn.LogSoftmax(dim=-1))
    crit = LabelSmoothing(5, padding_idx=0, smoothing=0.4)
    x = torch.randn(4, 6)
    target = torch.tensor([2, 1, 0, 3])
    loss = crit(generator(x), target)
    loss.backward()
