"""lucidrains/mlp-mixer-pytorch's MLPMixer, built by a function returning an nn.Sequential: `partial(nn.Conv1d, kernel_size = 1)` / nn.Linear passed as the `dense` layer factory into FeedForward, token- and channel-mixing PreNormResidual blocks `self.fn(self.norm(x)) + x`; trained a few steps on random images."""
# outcome: ok
# source: https://github.com/lucidrains/mlp-mixer-pytorch/blob/main/mlp_mixer_pytorch/mlp_mixer_pytorch.py
# repo: lucidrains/mlp-mixer-pytorch
# category: residual
from torch import nn
from functools import partial
from einops.layers.torch import Rearrange, Reduce

pair = lambda x: x if isinstance(x, tuple) else (x, x)

class PreNormResidual(nn.Module):
    def __init__(self, dim, fn):
        super().__init__()
        self.fn = fn
        self.norm = nn.LayerNorm(dim)

    def forward(self, x):
        return self.fn(self.norm(x)) + x

def FeedForward(dim, dim_hidden, dropout = 0., dense = nn.Linear):
    return nn.Sequential(
        dense(dim, dim_hidden),
        nn.GELU(),
        nn.Dropout(dropout),
        dense(dim_hidden, dim),
        nn.Dropout(dropout)
    )

def MLPMixer(*, image_size, channels, patch_size, dim, depth, num_classes, expansion_factor = 4, expansion_factor_token = 0.5, dropout = 0.):
    image_h, image_w = pair(image_size)
    assert (image_h % patch_size) == 0 and (image_w % patch_size) == 0, 'image must be divisible by patch size'
    num_patches = (image_h // patch_size) * (image_w // patch_size)
    chan_first, chan_last = partial(nn.Conv1d, kernel_size = 1), nn.Linear

    return nn.Sequential(
        Rearrange('b c (h p1) (w p2) -> b (h w) (p1 p2 c)', p1 = patch_size, p2 = patch_size),
        nn.Linear((patch_size ** 2) * channels, dim),
        *[nn.Sequential(
            PreNormResidual(dim, FeedForward(num_patches, int(expansion_factor * dim), dropout, chan_first)),
            PreNormResidual(dim, FeedForward(dim, int(expansion_factor_token * dim), dropout, chan_last))
        ) for _ in range(depth)],
        nn.LayerNorm(dim),
        Reduce('b n c -> b c', 'mean'),
        nn.Linear(dim, num_classes)
    )


if __name__ == '__main__':
    # README usage, shrunk: 16x16 images, tiny mixer, a few steps
    import torch
    import torch.nn.functional as F
    torch.manual_seed(0)
    model = MLPMixer(
        image_size = 16,
        channels = 3,
        patch_size = 4,
        dim = 16,
        depth = 2,
        num_classes = 5,
        dropout = 0.1
    )
    opt = torch.optim.Adam(model.parameters(), lr = 1e-3)
    for step in range(3):
        img = torch.randn(2, 3, 16, 16)
        labels = torch.randint(0, 5, (2,))
        pred = model(img)
        loss = F.cross_entropy(pred, labels)
        opt.zero_grad()
        loss.backward()
        opt.step()
        print(step, loss.item())
