"""Twin of 076_sequential_dropout_inplace_after_tanh.py, written out of place by hand: Classifier head declared as a Sequential with nn.Dropout(inplace=True) right after nn.Tanh()."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class PoolerHead(nn.Module):
    def __init__(self, hidden, num_labels, dropout=0.1):
        super().__init__()
        self.pooler = nn.Sequential(
            nn.Linear(hidden, hidden),
            nn.Tanh(),
            nn.Dropout(dropout),
        )
        self.classifier = nn.Linear(hidden, num_labels)

    def forward(self, hidden_states):
        pooled = self.pooler(hidden_states[:, 0])
        return self.classifier(pooled)


def run() -> None:
    torch.manual_seed(0)
    head = PoolerHead(8, 3)
    head.train()
    hidden_states = torch.randn(4, 5, 8)
    labels = torch.tensor([0, 2, 1, 1])
    loss = F.cross_entropy(head(hidden_states), labels)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    head = PoolerHead(8, 3)
    head.train()
    hidden_states = torch.randn(4, 5, 8)
    labels = torch.tensor([0, 2, 1, 1])
    loss = F.cross_entropy(head(hidden_states), labels)
    loss.backward()
    return {name: p.grad for name, p in head.named_parameters()}
