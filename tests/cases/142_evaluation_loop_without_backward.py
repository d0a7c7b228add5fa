"""An evaluation loop shifts the sigmoid scores in place before taking the argmax; nothing calls backward(), so the saved output is never read."""
# outcome: ok
import torch
import torch.nn as nn


def evaluate(model, batches):
    model.eval()
    predictions = []
    for x in batches:
        scores = torch.sigmoid(model(x))
        scores -= 0.5
        predictions.append(scores.argmax(dim=1))
    return predictions


def run() -> None:
    torch.manual_seed(0)
    model = nn.Linear(4, 3)
    evaluate(model, [torch.randn(2, 4) for _ in range(3)])
