"""snnTorch S-CNN, fixed: forward_pass calls utils.reset(net) before the time loop, so each batch starts from a fresh membrane potential."""
# outcome: ok
# source: https://github.com/jeshraghian/snntorch/issues/250
# repo: jeshraghian/snntorch
# category: retention
# twin: b016_snntorch_scnn_hidden_membrane_not_reset.py
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- snntorch (the parts used here: Leaky with init_hidden, the fast sigmoid surrogate, utils.reset) ----
class _FastSigmoid(torch.autograd.Function):
    @staticmethod
    def forward(ctx, input_, slope=25):
        ctx.save_for_backward(input_)
        ctx.slope = slope
        return (input_ > 0).float()

    @staticmethod
    def backward(ctx, grad_output):
        (input_,) = ctx.saved_tensors
        grad = grad_output / (ctx.slope * torch.abs(input_) + 1.0) ** 2
        return grad, None


class surrogate:
    @staticmethod
    def fast_sigmoid(slope=25):
        def inner(x):
            return _FastSigmoid.apply(x, slope)
        return inner


class Leaky(nn.Module):
    instances = []

    def __init__(self, beta, spike_grad=None, init_hidden=False, output=False, threshold=1.0):
        super().__init__()
        Leaky.instances.append(self)
        self.beta = beta
        self.threshold = threshold
        self.spike_grad = spike_grad
        self.init_hidden = init_hidden
        self.output = output
        self.mem = torch.zeros(1)

    def reset_hidden(self):
        self.mem = torch.zeros(1)

    def forward(self, input_):
        reset = (self.mem - self.threshold > 0).float().detach() if self.mem.dim() > 1 else 0
        self.mem = self.beta * self.mem + input_ - reset * self.threshold
        spk = self.spike_grad(self.mem - self.threshold)
        if self.output:
            return spk, self.mem
        return spk


class utils:
    @staticmethod
    def reset(net):
        for m in net.modules():
            if isinstance(m, Leaky):
                m.reset_hidden()
        return net


class SF:
    @staticmethod
    def ce_rate_loss():
        def loss_fn(spk_out, targets):
            return F.cross_entropy(spk_out.sum(0), targets)
        return loss_fn


# ---- the user's script ----
spike_grad = surrogate.fast_sigmoid(slope=25)
beta = 0.5
num_steps = 4

net = nn.Sequential(nn.Conv2d(1, 4, 5),
                    nn.MaxPool2d(2),
                    Leaky(beta=beta, spike_grad=spike_grad, init_hidden=True),
                    nn.Conv2d(4, 8, 5),
                    nn.MaxPool2d(2),
                    Leaky(beta=beta, spike_grad=spike_grad, init_hidden=True),
                    nn.Flatten(),
                    nn.Linear(8*4*4, 10),
                    Leaky(beta=beta, spike_grad=spike_grad, init_hidden=True, output=True)
                    )


def forward_pass(net, num_steps, data):
    mem_rec = []
    spk_rec = []
    utils.reset(net)  # resets hidden states for all LIF neurons in net

    for step in range(num_steps):
        spk_out, mem_out = net(data)
        spk_rec.append(spk_out)
        mem_rec.append(mem_out)

    return torch.stack(spk_rec), torch.stack(mem_rec)


optimizer = torch.optim.Adam(net.parameters(), lr=2e-2, betas=(0.9, 0.999))
loss_fn = SF.ce_rate_loss()

for epoch in range(1):
    for i in range(2):
        data = torch.rand(4, 1, 28, 28)
        targets = torch.randint(0, 10, (4,))

        net.train()
        spk_rec, _ = forward_pass(net, num_steps, data)

        loss_val = loss_fn(spk_rec, targets)

        optimizer.zero_grad()
        loss_val.backward()
        optimizer.step()
        print(f"Iteration {i}, Train Loss: {loss_val.item():.2f}")
