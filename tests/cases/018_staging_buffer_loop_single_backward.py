"""Sequence encoder reusing one staging buffer per time step: iteration 2 overwrites what iteration 1's Linear saved."""
# outcome: inplace-error
import torch
import torch.nn as nn


class StepEncoder(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, seq):
        batch, steps, d_in = seq.shape
        frame = seq.new_empty(batch, d_in)
        outputs = []
        for t in range(steps):
            frame.copy_(seq[:, t])  # error: IPL001
            outputs.append(self.fc(frame))  # saved-by
        return torch.stack(outputs, dim=1)


def run() -> None:
    torch.manual_seed(0)
    enc = StepEncoder(4, 6)
    seq = torch.randn(2, 3, 4)
    loss = enc(seq).pow(2).mean()
    loss.backward()
