"""Gradient accumulation: backward every micro-batch, optimizer.step() only every few batches, far below."""
# outcome: ok
# far-apart
import torch
from torch import nn

ACCUM_STEPS = 2


class Regressor(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = nn.Sequential(nn.Linear(3, 8), nn.Tanh(), nn.Linear(8, 1))

    def forward(self, x):
        return self.net(x)


def log_metrics(step, loss_value):
    return f"step {step}: {loss_value:.4f}"


def train(model, batches, optimizer, scheduler):
    lines = []
    optimizer.zero_grad()
    for step, (x, y) in enumerate(batches, start=1):
        pred = model(x)
        loss = nn.functional.mse_loss(pred, y) / ACCUM_STEPS
        loss.backward()

        lines.append(log_metrics(step, loss.item() * ACCUM_STEPS))
        if step % ACCUM_STEPS != 0:
            continue

        torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm=1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
    return lines


def run() -> None:
    torch.manual_seed(0)
    model = Regressor()
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-3)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=1, gamma=0.9)
    batches = [(torch.randn(4, 3), torch.randn(4, 1)) for _ in range(4)]
    train(model, batches, optimizer, scheduler)
