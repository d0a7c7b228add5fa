"""latent-diffusion: the DDPM keeps an LitEma of its denoiser whose buffers are updated in place under no_grad after every training batch, and the validation step swaps the EMA weights in and out of the model through .data copies."""
# outcome: ok
# source: https://github.com/CompVis/latent-diffusion/blob/main/ldm/modules/ema.py
# repo: CompVis/latent-diffusion
# category: iteration
from contextlib import contextmanager

import torch
from torch import nn
import torch.nn.functional as F


# ---- ldm/modules/ema.py ----
class LitEma(nn.Module):

    def __init__(
        self,
        model: nn.Module,
        decay: float = 0.9999,
        use_num_upates: bool = True,
    ):
        super().__init__()
        if decay < 0.0 or decay > 1.0:
            raise ValueError('Decay must be between 0 and 1')

        self.m_name2s_name = {}
        self.register_buffer('decay', torch.tensor(decay, dtype=torch.float32))
        self.register_buffer(
            'num_updates',
            torch.tensor(0, dtype=torch.int) if use_num_upates else torch.tensor(-1, dtype=torch.int))

        for name, p in model.named_parameters():
            if p.requires_grad:
                #remove as '.'-character is not allowed in buffers
                s_name = name.replace('.','')
                self.m_name2s_name.update({name:s_name})
                self.register_buffer(s_name,p.clone().detach().data)

        self.collected_params = []

    def forward(self, model: nn.Module):
        decay = self.decay

        if self.num_updates >= 0:
            self.num_updates += 1
            decay = min(self.decay,(1 + self.num_updates) / (10 + self.num_updates))

        one_minus_decay = 1.0 - decay

        with torch.no_grad():
            m_param = dict(model.named_parameters())
            shadow_params = dict(self.named_buffers())

            for key in m_param:
                if m_param[key].requires_grad:
                    sname = self.m_name2s_name[key]
                    shadow_params[sname] = shadow_params[sname].type_as(m_param[key])
                    shadow_params[sname].sub_(one_minus_decay * (shadow_params[sname] - m_param[key]))
                else:
                    assert not key in self.m_name2s_name

    def copy_to(self, model: nn.Module):
        m_param = dict(model.named_parameters())
        shadow_params = dict(self.named_buffers())
        for key in m_param:
            if m_param[key].requires_grad:
                m_param[key].data.copy_(shadow_params[self.m_name2s_name[key]].data)
            else:
                assert not key in self.m_name2s_name

    def store(self, parameters):
        self.collected_params = [param.clone() for param in parameters]

    def restore(self, parameters):
        for c_param, param in zip(self.collected_params, parameters):
            param.data.copy_(c_param.data)


# ---- ldm/models/diffusion/ddpm.py (the parts around the EMA; a tiny denoiser) ----
class DiffusionWrapper(nn.Module):
    def __init__(self, channels):
        super().__init__()
        self.diffusion_model = nn.Sequential(nn.Conv2d(channels, 8, 3, padding=1), nn.SiLU(),
                                             nn.Conv2d(8, channels, 3, padding=1))

    def forward(self, x, t):
        return self.diffusion_model(x)


class DDPM(nn.Module):
    def __init__(self, channels=3, timesteps=10, use_ema=True):
        super().__init__()
        self.model = DiffusionWrapper(channels)
        self.use_ema = use_ema
        if self.use_ema:
            self.model_ema = LitEma(self.model)
        betas = torch.linspace(1e-4, 2e-2, timesteps)
        alphas_cumprod = torch.cumprod(1. - betas, dim=0)
        self.register_buffer('sqrt_alphas_cumprod', alphas_cumprod.sqrt())
        self.register_buffer('sqrt_one_minus_alphas_cumprod', (1. - alphas_cumprod).sqrt())
        self.num_timesteps = timesteps

    @contextmanager
    def ema_scope(self, context=None):
        if self.use_ema:
            self.model_ema.store(self.model.parameters())
            self.model_ema.copy_to(self.model)
        try:
            yield None
        finally:
            if self.use_ema:
                self.model_ema.restore(self.model.parameters())

    def q_sample(self, x_start, t, noise=None):
        noise = torch.randn_like(x_start) if noise is None else noise
        return (self.sqrt_alphas_cumprod[t].view(-1, 1, 1, 1) * x_start +
                self.sqrt_one_minus_alphas_cumprod[t].view(-1, 1, 1, 1) * noise)

    def p_losses(self, x_start, t, noise=None):
        noise = torch.randn_like(x_start) if noise is None else noise
        x_noisy = self.q_sample(x_start=x_start, t=t, noise=noise)
        model_out = self.model(x_noisy, t)
        loss = F.mse_loss(model_out, noise)
        return loss, {'train/loss': loss.item()}

    def forward(self, x, *args, **kwargs):
        t = torch.randint(0, self.num_timesteps, (x.shape[0],), device=self.sqrt_alphas_cumprod.device).long()
        return self.p_losses(x, t, *args, **kwargs)

    def training_step(self, batch, batch_idx):
        loss, loss_dict = self(batch)
        return loss

    @torch.no_grad()
    def validation_step(self, batch, batch_idx):
        _, loss_dict_no_ema = self(batch)
        with self.ema_scope():
            _, loss_dict_ema = self(batch)
        return loss_dict_no_ema, loss_dict_ema

    def on_train_batch_end(self, *args, **kwargs):
        if self.use_ema:
            self.model_ema(self.model)

    def configure_optimizers(self):
        return torch.optim.AdamW(list(self.model.parameters()), lr=1e-3)


# ---- the Lightning loop, written out ----
if __name__ == "__main__":
    model = DDPM()
    opt = model.configure_optimizers()
    for batch_idx in range(4):
        batch = torch.randn(2, 3, 8, 8)
        loss = model.training_step(batch, batch_idx)
        opt.zero_grad()
        loss.backward()
        opt.step()
        model.on_train_batch_end()
        if batch_idx % 2 == 1:
            print(model.validation_step(torch.randn(2, 3, 8, 8), batch_idx))
