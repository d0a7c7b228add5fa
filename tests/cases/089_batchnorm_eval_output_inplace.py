"""Fine-tuning with frozen BatchNorm in eval mode: shifting the BN output in place is safe (BN saves its input)."""
# outcome: ok
import torch
import torch.nn as nn


class FrozenBNBackbone(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(4)
        self.shift = nn.Parameter(torch.zeros(1, 4, 1, 1))
        self.fc = nn.Linear(4, 2)

    def train(self, mode=True):
        super().train(mode)
        self.bn.eval()
        return self

    def forward(self, x):
        out = self.bn(self.conv(x))
        out += self.shift
        out.clamp_(min=0)
        return self.fc(out.mean((2, 3)))


def run() -> None:
    torch.manual_seed(0)
    model = FrozenBNBackbone().train()
    optimizer = torch.optim.SGD([p for n, p in model.named_parameters() if not n.startswith("bn.")], lr=0.01)
    loss = nn.functional.cross_entropy(model(torch.randn(2, 3, 6, 6)), torch.tensor([1, 0]))
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
