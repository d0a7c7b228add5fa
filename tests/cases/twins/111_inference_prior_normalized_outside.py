"""Twin of 111_inference_prior_normalized_outside.py, written out of place by hand: the prior is normalized into a new tensor outside inference mode."""
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
        prior = prior / prior.norm(dim=-1, keepdim=True)
        return self.head(torch.tanh(self.encoder(x)) + prior)


def run() -> None:
    torch.manual_seed(0)
    model = PriorEncoder(8)
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = PriorEncoder(8)
    loss = model(torch.randn(4, 8)).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
