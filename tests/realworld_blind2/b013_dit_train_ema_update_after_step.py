"""DiT train.py: an EMA copy of the model has requires_grad switched off, is initialised and then stepped towards the model after every optimizer step with ema_params[name].mul_(decay).add_(param.data) under @torch.no_grad()."""
# outcome: ok
# source: https://github.com/facebookresearch/DiT/blob/main/train.py
# repo: facebookresearch/DiT
# category: trainer
from collections import OrderedDict
from copy import deepcopy

import torch
import torch.nn as nn


#################################################################################
#                             Training Helper Functions                         #
#################################################################################

@torch.no_grad()
def update_ema(ema_model, model, decay=0.9999):
    """
    Step the EMA model towards the current model.
    """
    ema_params = OrderedDict(ema_model.named_parameters())
    model_params = OrderedDict(model.named_parameters())

    for name, param in model_params.items():
        # TODO: Consider applying only to params that require_grad to avoid small numerical changes of pos_embed
        ema_params[name].mul_(decay).add_(param.data, alpha=1 - decay)


def requires_grad(model, flag=True):
    """
    Set requires_grad flag for all parameters in a model.
    """
    for p in model.parameters():
        p.requires_grad = flag


# ---- a two-layer stand-in for DiT_models[args.model] and the diffusion loss ----
class TinyDiT(nn.Module):
    def __init__(self, in_channels=4, hidden=16, num_classes=10):
        super().__init__()
        self.y_embedder = nn.Embedding(num_classes + 1, hidden)
        self.t_embedder = nn.Linear(1, hidden)
        self.x_embedder = nn.Linear(in_channels, hidden)
        self.pos_embed = nn.Parameter(torch.zeros(1, 16, hidden), requires_grad=False)
        self.block = nn.TransformerEncoderLayer(hidden, 2, 32, batch_first=True)
        self.final_layer = nn.Linear(hidden, in_channels)

    def forward(self, x, t, y):
        B, C, H, W = x.shape
        h = self.x_embedder(x.flatten(2).transpose(1, 2)) + self.pos_embed
        c = self.t_embedder(t.float()[:, None]) + self.y_embedder(y)
        h = self.block(h + c[:, None])
        return self.final_layer(h).transpose(1, 2).reshape(B, C, H, W)


def training_losses(model, x, t, model_kwargs):
    noise = torch.randn_like(x)
    x_t = x + noise * (t.float()[:, None, None, None] / 1000)
    return {"loss": ((model(x_t, t, **model_kwargs) - noise) ** 2).mean(dim=(1, 2, 3))}


def main():
    model = TinyDiT()
    # Note that parameter initialization is done within the DiT constructor
    ema = deepcopy(model)  # Create an EMA of the model for use after training
    requires_grad(ema, False)

    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0)

    # Prepare models for training:
    update_ema(ema, model, decay=0)  # Ensure EMA is initialized with synced weights
    model.train()  # important! This enables embedding dropout for classifier-free guidance
    ema.eval()  # EMA model should always be in eval mode

    train_steps = 0
    running_loss = 0
    for epoch in range(2):
        for _ in range(2):
            x = torch.randn(2, 4, 4, 4)
            y = torch.randint(0, 10, (2,))
            t = torch.randint(0, 1000, (x.shape[0],))
            model_kwargs = dict(y=y)
            loss_dict = training_losses(model, x, t, model_kwargs)
            loss = loss_dict["loss"].mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            update_ema(ema, model)

            running_loss += loss.item()
            train_steps += 1
    model.eval()  # important! This disables randomized embedding dropout
    print(f"(step={train_steps:07d}) Train Loss: {running_loss / train_steps:.4f}")


if __name__ == "__main__":
    main()
