"""Classifier head declared as a Sequential with nn.Dropout(inplace=True) right after nn.Tanh()."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoolerHead(nn.Module):
    def __init__(self, hidden, num_labels, dropout=0.1):
        super().__init__()
        self.pooler = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Dropout(dropout, inplace=True),  # error: IPL003
        )
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, hidden_states):
        pooled = self.pooler(hidden_states[:, 0])  # saved-by
        return self.classifier(pooled)


def run() -> None:
    torch.manual_seed(0)
    head = PoolerHead(8, 3)
    head.train()
    hidden_states = torch.randn(4, 5, 8)
    labels = torch.tensor([0, 2, 1, 1])
    loss = F.cross_entropy(head(hidden_states), labels)
    loss.backward()
