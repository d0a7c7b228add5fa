"""SparseLLM (llama_gp_gd.py): inside the @torch.no_grad() layer-wise pruning pass, the auxiliary variable s is refined by gradient descent on leaf mini-batches (`s_batch -= lr * s_batch.grad`) with only the loss built under enable_grad."""
# outcome: ok
# source: https://github.com/BaiTheBest/SparseLLM/blob/main/llama_gp_gd.py
# repo: BaiTheBest/SparseLLM
# category: leaf
import torch
import torch.nn as nn


class LlamaMLP(nn.Module):
    def __init__(self, hidden, inter):
        super().__init__()
        self.gate_proj = nn.Linear(hidden, inter, bias=False)
        self.up_proj = nn.Linear(hidden, inter, bias=False)
        self.down_proj = nn.Linear(inter, hidden, bias=False)

    def forward(self, x):
        return self.down_proj(nn.functional.silu(self.gate_proj(x)) * self.up_proj(x))


def find_layers(module, layers=[nn.Linear], name=''):
    if type(module) in layers:
        return {name: module}
    res = {}
    for name1, child in module.named_children():
        res.update(find_layers(
            child, layers=layers, name=name + '.' + name1 if name != '' else name1
        ))
    return res


class Args:
    nsamples = 2
    sparsity = 0.5


args = Args()


@torch.no_grad()
def llama_sequential(layer, inps):
    full = find_layers(layer)
    subset = {"mlp." + n: full[n] for n in full}

    # record the inputs and outputs of the three projections, as the SparseGPT hooks do
    batch_inp, batch_out = {}, {}

    def add_batch(name):
        def tmp(_, inp, out):
            batch_inp.setdefault(name, []).append(inp[0].data)
            batch_out.setdefault(name, []).append(out.data)
        return tmp

    handles = [subset[name].register_forward_hook(add_batch(name)) for name in subset]
    for j in range(args.nsamples):
        layer(inps[j].unsqueeze(0))
    for h in handles:
        h.remove()

    alpha = 5.0
    beta = 5.0
    gamma = 5.0
    adagp_epochs = 2

    X = torch.stack(batch_inp['mlp.up_proj'], dim=0)
    Y = torch.stack(batch_out['mlp.down_proj'], dim=0)
    X, Y = X.reshape((-1, X.size(-1))).T, Y.reshape((-1, Y.size(-1))).T
    z = torch.stack(batch_out['mlp.up_proj'], dim=0)
    p = torch.stack(batch_inp['mlp.down_proj'], dim=0)
    s = torch.stack(batch_out['mlp.gate_proj'], dim=0)
    z = z.reshape((-1, z.size(-1))).T
    p = p.reshape((-1, p.size(-1))).T
    s = s.reshape((-1, s.size(-1))).T

    Xinv = torch.pinverse(X.to(dtype=torch.float32))

    training_loss = {'train_loss': []}

    for adagp_step in range(adagp_epochs):
        if adagp_step > 0:
            weight_matrix_1 = torch.matmul(z, Xinv)
            subset['mlp.up_proj'].weight.copy_(weight_matrix_1)
            pinv = torch.pinverse(p.to(dtype=torch.float32))
            weight_matrix_2 = torch.matmul(Y, pinv)
            subset['mlp.down_proj'].weight.copy_(weight_matrix_2)
            weight_matrix_3 = torch.matmul(s, Xinv)
            subset['mlp.gate_proj'].weight.copy_(weight_matrix_3)

        ##############
        # optimize p
        ##############
        next_weight = subset['mlp.down_proj'].weight
        m1 = beta * torch.matmul(next_weight.T, next_weight)
        m2 = gamma * torch.eye(m1.shape[0], device=m1.device)
        av = torch.inverse(m1 + m2)
        layer_nl_output = nn.functional.silu(s) * z
        m3 = beta * torch.matmul(next_weight.T, Y)
        m4 = gamma * layer_nl_output
        af = m3 + m4
        p = torch.matmul(av, af)

        ##############
        # optimize z
        ##############
        w = subset['mlp.up_proj'].weight
        m = torch.matmul(w, X)
        swish = nn.functional.silu(s)
        z = (m + swish * p) / (swish ** 2 + 1)

        ##############
        # optimize s
        ##############
        w = subset['mlp.gate_proj'].weight
        w = w.to(dtype=torch.float32).requires_grad_(True)

        s_update_epochs = 2
        s_learning_rate = 0.01
        for _ in range(s_update_epochs):
            batch_size = 4
            for k in range(0, s.size(-1), batch_size):
                chunk = slice(k, k + batch_size)

                X_batch = X[:,chunk].to(dtype=torch.float32).requires_grad_(True)
                z_batch = z[:,chunk].to(dtype=torch.float32).requires_grad_(True)
                p_batch = p[:,chunk].to(dtype=torch.float32).requires_grad_(True)
                s_batch = s[:,chunk].to(dtype=torch.float32).requires_grad_(True)

                with torch.enable_grad():   # temporarily turn on the Pytorch computational graph functionality
                    loss_s = alpha * torch.norm(s_batch - torch.matmul(w, X_batch))**2
                    loss_s += gamma * torch.norm(p_batch - nn.functional.silu(s_batch) * z_batch)**2

                loss_s.backward()
                s_batch -= s_learning_rate * s_batch.grad
                s_batch.grad.zero_()
                s[:,chunk] = s_batch.detach()

        s_batch, X_batch, z_batch, p_batch, w = s_batch.detach(), X_batch.detach(), z_batch.detach(), p_batch.detach(), w.detach()
        del w, loss_s, s_batch, X_batch, z_batch, p_batch

        tmp_training_loss = nn.functional.mse_loss(torch.matmul(subset['mlp.down_proj'].weight,
                                                                nn.functional.silu(torch.matmul(subset['mlp.gate_proj'].weight, X))
                                                                * torch.matmul(subset['mlp.up_proj'].weight, X)), Y)
        training_loss['train_loss'].append(tmp_training_loss.item())
    return training_loss


if __name__ == "__main__":
    layer = LlamaMLP(8, 16)
    inps = torch.randn(args.nsamples, 6, 8)
    print(llama_sequential(layer, inps))
