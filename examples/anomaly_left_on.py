"""A training script that leaves ``torch.autograd.set_detect_anomaly(True)`` on for good.

Anomaly mode records a Python stack trace for every autograd node and checks every backward
result for NaN: useful for one debugging run, a large slowdown in every run after that.
torch ACCEPTS it and the script trains normally; the cost is silent.
Fix: remove it, or guard it behind an environment variable.
"""

import torch
from torch import nn

torch.autograd.set_detect_anomaly(True)  # left on after a debugging session


def main() -> None:
    torch.manual_seed(0)
    model = nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(8 * 14 * 14, 10),
    )
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-3)
    images = torch.randn(8, 1, 28, 28)
    labels = torch.randint(0, 10, (8,))
    for _step in range(3):
        optimizer.zero_grad()
        loss = nn.functional.cross_entropy(model(images), labels)
        loss.backward()
        optimizer.step()
    print(f"loss={loss.item():.4f} anomaly_enabled={torch.is_anomaly_enabled()}")


if __name__ == "__main__":
    main()
