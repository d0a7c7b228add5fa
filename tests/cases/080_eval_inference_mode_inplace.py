"""Train step followed by evaluation under torch.inference_mode(), where the eval code works in place freely."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F


@torch.inference_mode()
def evaluate(model, x, y):
    model.eval()
    probs = F.softmax(model(x), dim=-1)
    probs.clamp_(min=1e-6)
    probs /= probs.sum(dim=-1, keepdim=True)
    nll = -probs.gather(1, y[:, None]).log_().mean()
    model.train()
    return nll.item()


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Dropout(0.2), nn.ReLU(), nn.Linear(8, 3))
    optimizer = torch.optim.Adam(model.parameters())
    x, y = torch.randn(6, 4), torch.randint(0, 3, (6,))
    loss = F.cross_entropy(model(x), y)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    evaluate(model, x, y)
