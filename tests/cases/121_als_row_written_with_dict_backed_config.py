"""An ALS step writes each solved row straight into an nn.Parameter; which solver runs comes from a dict-backed config (`Config(dict)` whose `__setattr__` stores items), given a default only when the key is missing."""
# outcome: leaf-error
import torch
from torch import nn


class Config(dict):
    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError:
            raise AttributeError(key)

    def __setattr__(self, key, value):
        self[key] = value


class Factors(nn.Module):
    def __init__(self, n_users, dim):
        super().__init__()
        self.P = nn.Parameter(torch.randn(n_users, dim) * 0.1)

    def forward(self):
        return self.P.sum()


class Trainer:
    def __init__(self, options):
        self.options = options
        self.net = None

    def setup(self):
        cfg = Config(self.options)
        if not hasattr(cfg, "method"):
            cfg.method = "sgd"
        self.method = cfg.method
        self.net = Factors(3, 2)

    def fit(self, rows):
        self.setup()
        if self.method == "sgd":
            raise NotImplementedError("only the ALS solver here")
        return self.als(rows)

    def als(self, rows):
        for user, row in enumerate(rows):
            self.net.P[user] = row  # error: IPL002
        return self.net()


def run() -> None:
    torch.manual_seed(0)
    Trainer({"method": "als"}).fit(torch.randn(3, 2))
