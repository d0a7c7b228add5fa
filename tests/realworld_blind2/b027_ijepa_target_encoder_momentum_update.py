"""I-JEPA: each train_step regresses the predictor onto the no_grad target encoder's masked features, steps the optimizer, then moves the target encoder toward the context encoder in place through .data with a momentum from a generator schedule."""
# outcome: ok
# source: https://github.com/facebookresearch/ijepa/blob/main/src/train.py
# repo: facebookresearch/ijepa
# category: iteration
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- src/masks/utils.py ----
def apply_masks(x, masks):
    all_x = []
    for m in masks:
        mask_keep = m.unsqueeze(-1).repeat(1, 1, x.size(-1))
        all_x += [torch.gather(x, dim=1, index=mask_keep)]
    return torch.cat(all_x, dim=0)


# ---- src/utils/tensors.py ----
def repeat_interleave_batch(x, B, repeat):
    N = len(x) // B
    x = torch.cat([
        torch.cat([x[i*B:(i+1)*B] for _ in range(repeat)], dim=0)
        for i in range(N)
    ], dim=0)
    return x


# ---- src/models/vision_transformer.py (tiny stand-ins with the same calls) ----
class VisionTransformer(nn.Module):
    def __init__(self, patch_size=4, embed_dim=16, num_patches=16):
        super().__init__()
        self.patch_embed = nn.Conv2d(3, embed_dim, kernel_size=patch_size, stride=patch_size)
        self.pos_embed = nn.Parameter(torch.zeros(1, num_patches, embed_dim), requires_grad=False)
        self.block = nn.Sequential(nn.LayerNorm(embed_dim), nn.Linear(embed_dim, embed_dim), nn.GELU())
        self.norm = nn.LayerNorm(embed_dim)

    def forward(self, x, masks=None):
        x = self.patch_embed(x).flatten(2).transpose(1, 2)
        x = x + self.pos_embed
        if masks is not None:
            x = apply_masks(x, masks)
        x = x + self.block(x)
        return self.norm(x)


class VisionTransformerPredictor(nn.Module):
    def __init__(self, embed_dim=16, num_patches=16):
        super().__init__()
        self.predictor_embed = nn.Linear(embed_dim, embed_dim)
        self.mask_token = nn.Parameter(torch.zeros(1, 1, embed_dim))
        self.predictor_pos_embed = nn.Parameter(torch.randn(1, num_patches, embed_dim) * 0.02, requires_grad=False)
        self.predictor_proj = nn.Linear(embed_dim, embed_dim)

    def forward(self, x, masks_x, masks):
        B = len(x) // len(masks_x)
        x = self.predictor_embed(x)
        pos_embs = self.predictor_pos_embed.repeat(B, 1, 1)
        pos_embs = apply_masks(pos_embs, masks)
        pos_embs = repeat_interleave_batch(pos_embs, B, repeat=len(masks_x))
        pred_tokens = self.mask_token.repeat(pos_embs.size(0), pos_embs.size(1), 1) + pos_embs
        x = x.mean(1, keepdim=True).repeat(len(masks), 1, 1) + pred_tokens
        return self.predictor_proj(x)


class AllReduce:
    @staticmethod
    def apply(x):
        return x


# ---- src/train.py ----
def main():
    ema = [0.996, 1.0]
    ipe, num_epochs, ipe_scale = 3, 2, 1.0
    use_bfloat16 = False

    encoder = VisionTransformer()
    predictor = VisionTransformerPredictor()
    target_encoder = copy.deepcopy(encoder)
    param_groups = [{'params': (p for n, p in encoder.named_parameters())},
                    {'params': (p for n, p in predictor.named_parameters())}]
    optimizer = torch.optim.AdamW(param_groups, lr=1e-3)
    for p in target_encoder.parameters():
        p.requires_grad = False

    # -- momentum schedule
    momentum_scheduler = (ema[0] + i*(ema[1]-ema[0])/(ipe*num_epochs*ipe_scale)
                          for i in range(int(ipe*num_epochs*ipe_scale)+1))

    for epoch in range(num_epochs):
        for itr in range(ipe):
            imgs = torch.randn(2, 3, 16, 16)
            masks_enc = [torch.stack([torch.randperm(16)[:8] for _ in range(2)])]
            masks_pred = [torch.stack([torch.randperm(16)[:4] for _ in range(2)]) for _ in range(2)]

            def train_step():
                # --

                def forward_target():
                    with torch.no_grad():
                        h = target_encoder(imgs)
                        h = F.layer_norm(h, (h.size(-1),))  # normalize over feature-dim
                        B = len(h)
                        # -- create targets (masked regions of h)
                        h = apply_masks(h, masks_pred)
                        h = repeat_interleave_batch(h, B, repeat=len(masks_enc))
                        return h

                def forward_context():
                    z = encoder(imgs, masks_enc)
                    z = predictor(z, masks_enc, masks_pred)
                    return z

                def loss_fn(z, h):
                    loss = F.smooth_l1_loss(z, h)
                    loss = AllReduce.apply(loss)
                    return loss

                # Step 1. Forward
                h = forward_target()
                z = forward_context()
                loss = loss_fn(z, h)

                #  Step 2. Backward & step
                loss.backward()
                optimizer.step()
                optimizer.zero_grad()

                # Step 3. momentum update of target encoder
                with torch.no_grad():
                    m = next(momentum_scheduler)
                    for param_q, param_k in zip(encoder.parameters(), target_encoder.parameters()):
                        param_k.data.mul_(m).add_((1.-m) * param_q.detach().data)

                return float(loss)
            loss = train_step()
            print(epoch, itr, loss)


if __name__ == "__main__":
    main()
