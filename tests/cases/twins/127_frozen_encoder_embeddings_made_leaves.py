"""Twin of 127_frozen_encoder_embeddings_made_leaves.py, written by hand: the position embeddings are added under torch.no_grad(), so the embeddings stay the leaf whose gradient is wanted."""
import torch
from torch import nn


class Encoder(nn.Module):
    def __init__(self, vocab=20, dim=8, max_len=16):
        super().__init__()
        self.tok = nn.Embedding(vocab, dim)
        self.pos = nn.Embedding(max_len, dim)
        self.out = nn.Linear(dim, 2)

    def forward(self, h):
        return self.out(torch.tanh(h))


def embed(model, ids):
    h = model.tok(ids)
    with torch.no_grad():
        h += model.pos(torch.arange(ids.shape[1]))
    return h


def make_inputs_require_grads(module, inputs, output):
    output.requires_grad_(True)


def run() -> None:
    torch.manual_seed(0)
    model = Encoder()
    for p in model.parameters():
        p.requires_grad = False
    model.tok.register_forward_hook(make_inputs_require_grads)
    model(embed(model, torch.randint(0, 20, (2, 5)))).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = Encoder()
    for p in model.parameters():
        p.requires_grad = False
    model.tok.register_forward_hook(make_inputs_require_grads)
    h = embed(model, torch.randint(0, 20, (2, 5)))
    model(h).sum().backward()
    return {"embeddings": h.grad}
