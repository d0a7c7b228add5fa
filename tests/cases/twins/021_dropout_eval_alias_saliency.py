"""Twin of 021_dropout_eval_alias_saliency.py, written out of place by hand: Saliency map with the model in eval(): Dropout returns its input itself, so a write through its result hits the saved sigmoid output."""
import torch
import torch.nn as nn


class Scorer(nn.Module):
    def __init__(self, d_in: int, d_hidden: int) -> None:
        super().__init__()
        self.fc1 = nn.Linear(d_in, d_hidden)
        self.drop = nn.Dropout(p=0.3)
        self.fc2 = nn.Linear(d_hidden, 1)
        self.temperature = 2.0

    def _sharpen(self, h: torch.Tensor) -> torch.Tensor:
        return h * self.temperature

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.sigmoid(self.fc1(x))
        h = self.drop(h)
        h = self._sharpen(h)
        return self.fc2(h)


def saliency(model: nn.Module, x: torch.Tensor) -> torch.Tensor:
    model.eval()
    x = x.clone().requires_grad_(True)
    score = model(x).sum()
    score.backward()
    return x.grad.abs()


def run() -> None:
    torch.manual_seed(0)
    model = Scorer(6, 10)
    saliency(model, torch.randn(3, 6))


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Scorer(6, 10)
    saliency_map = saliency(model, torch.randn(3, 6))
    return {"saliency": saliency_map, **{name: p.grad for name, p in model.named_parameters()}}
