"""remove-anomaly (unsafe): the switch goes under an environment variable; adds `import os`."""

import torch
import torch.nn as nn


def main() -> None:
    # debugging a NaN last week (this comment stays)
    torch.autograd.set_detect_anomaly(True)  # slow!
    model = nn.Linear(3, 1)
    model(torch.randn(2, 3)).sum().backward()
