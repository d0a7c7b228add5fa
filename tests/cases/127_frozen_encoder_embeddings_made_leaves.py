"""A frozen encoder (every parameter's requires_grad set to False) trained through its input gradients: a forward hook on the token embedding calls `output.requires_grad_(True)`, which makes the embeddings a leaf, and the helper that embeds the tokens then adds the position embeddings into them in place."""
# outcome: leaf-error
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
    h += model.pos(torch.arange(ids.shape[1]))  # error: IPL002
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
