"""Twin of 018_staging_buffer_loop_single_backward.py, written out of place by hand: Sequence encoder reusing one staging buffer per time step: iteration 2 overwrites what iteration 1's Linear saved."""
import torch
import torch.nn as nn


class StepEncoder(nn.Module):
    def __init__(self, d_in, d_out):
        super().__init__()
        self.fc = nn.Linear(d_in, d_out)

    def forward(self, seq):
        batch, steps, d_in = seq.shape
        outputs = []
        for t in range(steps):
            outputs.append(self.fc(seq[:, t]))
        return torch.stack(outputs, dim=1)


def run() -> None:
    torch.manual_seed(0)
    enc = StepEncoder(4, 6)
    seq = torch.randn(2, 3, 4)
    loss = enc(seq).pow(2).mean()
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    enc = StepEncoder(4, 6)
    seq = torch.randn(2, 3, 4)
    loss = enc(seq).pow(2).mean()
    loss.backward()
    return {name: p.grad for name, p in enc.named_parameters()}
