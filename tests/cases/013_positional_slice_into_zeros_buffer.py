"""Builds a feature matrix by slice-assigning into a fresh torch.zeros buffer: the buffer was saved by nothing."""
# outcome: ok
import torch
import torch.nn as nn


class ConcatFeatures(nn.Module):
    def __init__(self, d_a, d_b, n_out):
        super().__init__()
        self.enc_a = nn.Linear(4, d_a)
        self.enc_b = nn.Linear(4, d_b)
        self.head = nn.Linear(d_a + d_b, n_out)
        self.d_a = d_a

    def forward(self, x):
        a = torch.sigmoid(self.enc_a(x))
        b = torch.tanh(self.enc_b(x))
        feats = torch.zeros(x.shape[0], self.head.in_features)
        feats[:, : self.d_a] = a
        feats[:, self.d_a :] = b
        return self.head(feats)


def run() -> None:
    torch.manual_seed(0)
    model = ConcatFeatures(3, 5, 2)
    target = torch.randn(6, 2)
    loss = nn.functional.smooth_l1_loss(model(torch.randn(6, 4)), target)
    loss.backward()
    assert model.enc_a.weight.grad is not None
