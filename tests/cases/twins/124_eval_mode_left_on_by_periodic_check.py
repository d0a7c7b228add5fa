"""Twin of 124_eval_mode_left_on_by_periodic_check.py, written out of place by hand: the one-hot is scattered into a new tensor."""
import torch
import torch.nn.functional as F
from torch import nn


class Quantizer(nn.Module):
    def __init__(self, dim=4, codes=6):
        super().__init__()
        self.encode = nn.Linear(dim, codes)
        self.codebook = nn.Linear(codes, dim, bias=False)

    def forward(self, x):
        logits = self.encode(x)
        if self.training:
            soft = F.gumbel_softmax(logits, tau=1.0, hard=True, dim=1)
        else:
            soft = F.softmax(logits, dim=1)
            soft = soft.scatter(1, soft.argmax(dim=1, keepdim=True), 1)
        return F.mse_loss(self.codebook(soft), x)


def train(model, batches, test_every=1, save_every=100):
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    model.train()
    for step, x in enumerate(batches, 1):
        loss = model(x)
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % test_every == 0:
            model.eval()
            with torch.no_grad():
                model(x)
        if step % save_every == 0:
            model.train()


def run() -> None:
    torch.manual_seed(0)
    model = Quantizer()
    train(model, [torch.randn(5, 4) for _ in range(3)])


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Quantizer()
    train(model, [torch.randn(5, 4) for _ in range(3)])
    return {name: p.detach().clone() for name, p in model.named_parameters()}
