"""Autoregressive decoder trained with a preallocated key cache (values kept in a list): step t+1 writes the cache that step t's attention saved."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class CachedDecoder(nn.Module):
    def __init__(self, dim, max_len):
        super().__init__()
        self.q = nn.Linear(dim, dim)
        self.k = nn.Linear(dim, dim)
        self.v = nn.Linear(dim, dim)
        self.out = nn.Linear(dim, dim)
        self.max_len = max_len

    def init_cache(self, batch, dim):
        return torch.zeros(batch, self.max_len, dim)

    def write_cache(self, cache, pos, value):
        cache[:, pos] = value  # error: IPL001

    def step(self, x_t, pos, k_cache, values):
        self.write_cache(k_cache, pos, self.k(x_t))
        values.append(self.v(x_t))
        q = self.q(x_t).unsqueeze(1)
        keys = k_cache[:, : pos + 1]
        scores = torch.bmm(q, keys.transpose(1, 2))  # saved-by
        attn = torch.softmax(scores, dim=-1)
        return self.out(torch.bmm(attn, torch.stack(values, dim=1)).squeeze(1))

    def forward(self, x):
        batch, steps, dim = x.shape
        k_cache, values = self.init_cache(batch, dim), []
        return torch.stack([self.step(x[:, t], t, k_cache, values) for t in range(steps)], dim=1)


def run() -> None:
    torch.manual_seed(0)
    decoder = CachedDecoder(4, max_len=4)
    x = torch.randn(2, 3, 4)
    loss = decoder(x).pow(2).mean()
    loss.backward()
