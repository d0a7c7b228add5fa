"""lucidrains' first VectorQuantize: every training forward updates the codebook buffers by EMA in place (`moving_avg.data.mul_().add_()`, `self.embed.data.copy_()`) after `flatten @ self.embed` used them, and returns a straight-through `input + (quantize - input).detach()`; trained for a few steps inside a tiny autoencoder."""
# outcome: ok
# source: https://github.com/lucidrains/vector-quantize-pytorch/blob/3604d0e0ef1a2b5cdb1520cc55cd5a95f0ffa374/vector_quantizer_pytorch/vector_quantizer_pytorch.py
# repo: lucidrains/vector-quantize-pytorch
# category: iteration
import torch
from torch import nn
import torch.nn.functional as F

def ema_inplace(moving_avg, new, decay):
    moving_avg.data.mul_(decay).add_(new, alpha = (1 - decay))

def laplace_smoothing(x, n_categories, eps=1e-5):
    return (x + eps) / (x.sum() + n_categories * eps)

class VectorQuantize(nn.Module):
    def __init__(self, dim, n_embed, decay=0.8, commitment=1., eps=1e-5):
        super().__init__()

        self.dim = dim
        self.n_embed = n_embed
        self.decay = decay
        self.eps = eps
        self.commitment = commitment

        embed = torch.randn(dim, n_embed)
        self.register_buffer('embed', embed)
        self.register_buffer('cluster_size', torch.zeros(n_embed))
        self.register_buffer('embed_avg', embed.clone())

    def forward(self, input):
        dtype = input.dtype
        flatten = input.reshape(-1, self.dim)
        dist = (
            flatten.pow(2).sum(1, keepdim=True)
            - 2 * flatten @ self.embed
            + self.embed.pow(2).sum(0, keepdim=True)
        )
        _, embed_ind = (-dist).max(1)
        embed_onehot = F.one_hot(embed_ind, self.n_embed).type(dtype)
        embed_ind = embed_ind.view(*input.shape[:-1])
        quantize = F.embedding(embed_ind, self.embed.transpose(0, 1))

        if self.training:
            ema_inplace(self.cluster_size, embed_onehot.sum(0), self.decay)
            embed_sum = flatten.transpose(0, 1) @ embed_onehot
            ema_inplace(self.embed_avg, embed_sum, self.decay)
            cluster_size = laplace_smoothing(self.cluster_size, self.n_embed, self.eps) * self.cluster_size.sum()
            embed_normalized = self.embed_avg / cluster_size.unsqueeze(0)
            self.embed.data.copy_(embed_normalized)

        loss = F.mse_loss(quantize.detach(), input) * self.commitment
        quantize = input + (quantize - input).detach()
        return quantize, loss


if __name__ == "__main__":
    # README usage (dim=256, n_embed=512, x of shape (1, 1024, 256)), shrunk, inside a tiny autoencoder
    encoder = nn.Linear(16, 32)
    vq = VectorQuantize(dim = 32, n_embed = 64, decay = 0.8, commitment = 1.)
    decoder = nn.Linear(32, 16)
    opt = torch.optim.Adam(list(encoder.parameters()) + list(decoder.parameters()), lr = 1e-3)
    for step in range(3):
        x = torch.randn(1, 128, 16)
        quantized, commit_loss = vq(encoder(x))
        recon = decoder(quantized)
        loss = F.mse_loss(recon, x) + commit_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(step, loss.item())
