"""Two losses on one graph with a fused Adam step between their backwards: a fused step does not bump the weights' version on CPU, so nothing raises, but the second backward uses the new weights."""
# outcome: ok
import torch
import torch.nn as nn


def run() -> None:
    torch.manual_seed(0)
    net = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 1))
    opt = torch.optim.Adam(net.parameters(), lr=0.1, fused=True)
    x = torch.randn(6, 4)
    out = net(x)
    loss_main = out.mean()
    loss_aux = out.pow(2).mean()
    opt.zero_grad()
    loss_main.backward(retain_graph=True)
    opt.step()  # warning: IPL007
    loss_aux.backward()
