"""Encoder that computes a prior under torch.inference_mode() to save memory, then normalizes it in place after the block, where torch refuses writes into inference tensors."""
# outcome: refused-error
import torch
import torch.nn as nn


class PriorEncoder(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.encoder = nn.Linear(dim, dim)
        self.head = nn.Linear(dim, 1)

    def forward(self, x):
        with torch.inference_mode():
            prior = self.encoder(x)
        prior /= prior.norm(dim=-1, keepdim=True)  # error: IPL009
        return self.head(torch.tanh(self.encoder(x)) + prior)


def run() -> None:
    torch.manual_seed(0)
    model = PriorEncoder(8)
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
