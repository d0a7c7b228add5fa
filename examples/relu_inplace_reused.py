"""``nn.ReLU(inplace=True)`` applied to features that another branch already saved.

The attention-score branch ``self.score(features)`` is a Linear layer, and Linear saves its
INPUT (it needs it for the weight gradient). The value branch then runs the in-place ReLU on
the same ``features`` tensor, overwriting what the score layer saved.
torch REJECTS it: backward raises "... modified by an inplace operation: [torch.FloatTensor [40, 32]], which is output 0 of
AsStrided" (the flattened view of ``features`` that the Linear layer saved).
The write happens inside the ReLU module, so the fix is ``inplace=False`` at the line that
constructs it (``self.act = nn.ReLU(inplace=True)``).
"""

import torch
from torch import nn


class AttentionPooling(nn.Module):
    def __init__(self, in_dim: int = 16, hidden: int = 32, num_classes: int = 3) -> None:
        super().__init__()
        self.embed = nn.Linear(in_dim, hidden)
        self.score = nn.Linear(hidden, 1)
        self.act = nn.ReLU(inplace=True)
        self.classifier = nn.Linear(hidden, num_classes)

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        features = self.embed(tokens)                     # (B, T, hidden)
        weights = torch.softmax(self.score(features), 1)  # score saves `features`
        values = self.act(features)                       # ReLU overwrites `features` in place
        pooled = (weights * values).sum(dim=1)
        return self.classifier(pooled)


def main() -> None:
    torch.manual_seed(0)
    model = AttentionPooling()
    tokens = torch.randn(4, 10, 16)
    labels = torch.randint(0, 3, (4,))
    loss = nn.functional.cross_entropy(model(tokens), labels)
    loss.backward()
    print(f"loss={loss.item():.4f}")


if __name__ == "__main__":
    main()
