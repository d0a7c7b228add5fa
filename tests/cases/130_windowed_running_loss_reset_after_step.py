"""Fine-tuning recipe with gradient accumulation: the running loss tensor is summed for logging and set back to 0 after each optimizer step, so it holds one window's graphs, not the epoch's."""
# outcome: ok
import torch
import torch.nn.functional as F
from torch import nn


def train(model, loader, optimizer, accumulation_steps):
    logged = []
    running_loss = 0
    num_tokens = 0
    for idx, (x, y) in enumerate(loader):
        current_num_tokens = (y != -100).sum()
        num_tokens += current_num_tokens
        current_loss = F.cross_entropy(model(x), y, ignore_index=-100) * current_num_tokens
        running_loss += current_loss
        current_loss.backward()
        if (idx + 1) % accumulation_steps == 0:
            optimizer.step()
            optimizer.zero_grad(set_to_none=True)
            logged.append(running_loss.item() / num_tokens.item())
            running_loss = 0
            num_tokens = 0
    return logged


def run() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(6, 16), nn.Tanh(), nn.Linear(16, 5))
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)
    loader = [(torch.randn(8, 6), torch.randint(0, 5, (8,))) for _ in range(8)]
    train(model, loader, optimizer, accumulation_steps=4)
