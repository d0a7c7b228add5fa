"""Twin of 064_log_softmax_pad_zero.py, written out of place by hand: Label-smoothed sequence loss that zeroes the padding column of the log-probabilities in place; log_softmax saved them."""
import torch
import torch.nn as nn
import torch.nn.functional as F

PAD = 0


class LabelSmoothingLoss(nn.Module):
    def __init__(self, vocab_size, smoothing=0.1):
        super().__init__()
        self.vocab_size = vocab_size
        self.smoothing = smoothing

    def forward(self, logits, target):
        logp = F.log_softmax(logits, dim=-1)
        logp = logp.index_fill(1, torch.tensor([PAD]), 0.0)
        with torch.no_grad():
            true_dist = torch.full_like(logp, self.smoothing / (self.vocab_size - 2))
            true_dist.scatter_(1, target.unsqueeze(1), 1.0 - self.smoothing)
            true_dist[:, PAD] = 0
            true_dist[target == PAD] = 0
        return -(true_dist * logp).sum() / (target != PAD).sum()


def run() -> None:
    torch.manual_seed(0)
    decoder = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))
    tokens = torch.tensor([3, 5, 7, 0, 2, 9])
    target = torch.tensor([5, 7, 0, 0, 9, 1])
    loss = LabelSmoothingLoss(10)(decoder(tokens), target)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    decoder = nn.Sequential(nn.Embedding(10, 8), nn.Linear(8, 10))
    tokens = torch.tensor([3, 5, 7, 0, 2, 9])
    target = torch.tensor([5, 7, 0, 0, 9, 1])
    loss = LabelSmoothingLoss(10)(decoder(tokens), target)
    loss.backward()
    return {name: p.grad for name, p in decoder.named_parameters()}
