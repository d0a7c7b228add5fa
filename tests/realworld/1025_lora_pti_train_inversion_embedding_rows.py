"""cloneofsimo/lora pivotal tuning (cli_lora_pti.train_inversion): the token-embedding weight of the text encoder is the only trained leaf; after each AdamW step the script renormalizes the placeholder rows and restores every other row from a `.weight.data.clone()` copy by index assignment into the weight, inside `torch.no_grad()`; a few inversion steps with cached latents on random data."""
# outcome: ok
# source: https://github.com/cloneofsimo/lora/blob/master/lora_diffusion/cli_lora_pti.py
# repo: cloneofsimo/lora
# category: leaf
import itertools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim
from tqdm.auto import tqdm


# ---- stand-ins for transformers.CLIPTextModel, diffusers UNet2DConditionModel / DDPMScheduler / get_scheduler (not installed here) ----
class _Embeddings(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.token_embedding = nn.Embedding(vocab, dim)
        self.position_embedding = nn.Embedding(max_len, dim)

    def forward(self, input_ids):
        pos = torch.arange(input_ids.shape[1], device=input_ids.device)
        return self.token_embedding(input_ids) + self.position_embedding(pos)[None]


class _TextModel(nn.Module):
    def __init__(self, vocab, dim, max_len):
        super().__init__()
        self.embeddings = _Embeddings(vocab, dim, max_len)
        self.encoder = nn.Sequential(nn.Linear(dim, dim), nn.GELU(), nn.Linear(dim, dim))
        self.final_layer_norm = nn.LayerNorm(dim)

    def forward(self, input_ids):
        h = self.embeddings(input_ids)
        h = h + self.encoder(h)
        return (self.final_layer_norm(h),)


class CLIPTextModel(nn.Module):
    def __init__(self, vocab=12, dim=16, max_len=6):
        super().__init__()
        self.text_model = _TextModel(vocab, dim, max_len)

    @property
    def device(self):
        return self.text_model.embeddings.token_embedding.weight.device

    def get_input_embeddings(self):
        return self.text_model.embeddings.token_embedding

    def forward(self, input_ids):
        return self.text_model(input_ids)


class _UNetOutput:
    def __init__(self, sample):
        self.sample = sample


class UNet2DConditionModel(nn.Module):
    def __init__(self, channels=4, cross_dim=16):
        super().__init__()
        self.conv_in = nn.Conv2d(channels, 8, 3, padding=1)
        self.proj = nn.Linear(cross_dim, 8)
        self.conv_out = nn.Conv2d(8, channels, 3, padding=1)

    @property
    def device(self):
        return self.conv_in.weight.device

    def forward(self, sample, timestep, encoder_hidden_states):
        h = self.conv_in(sample) + self.proj(encoder_hidden_states.mean(1))[:, :, None, None]
        return _UNetOutput(self.conv_out(F.silu(h)))


class _Config:
    num_train_timesteps = 1000
    prediction_type = "epsilon"


class DDPMScheduler:
    def __init__(self):
        self.config = _Config()
        betas = torch.linspace(0.00085 ** 0.5, 0.012 ** 0.5, 1000) ** 2
        self.alphas_cumprod = torch.cumprod(1.0 - betas, dim=0)

    def add_noise(self, original_samples, noise, timesteps):
        a = self.alphas_cumprod[timesteps].view(-1, 1, 1, 1)
        return a.sqrt() * original_samples + (1 - a).sqrt() * noise


def get_scheduler(name, optimizer, num_warmup_steps, num_training_steps):
    return optim.lr_scheduler.LambdaLR(optimizer, lambda step: 1.0)


# ---- lora_diffusion/cli_lora_pti.py ----
def loss_step(
    batch,
    unet,
    vae,
    text_encoder,
    scheduler,
    train_inpainting=False,
    t_mutliplier=1.0,
    mixed_precision=False,
    mask_temperature=1.0,
    cached_latents: bool = False,
):
    weight_dtype = torch.float32
    if not cached_latents:
        latents = vae.encode(
            batch["pixel_values"].to(dtype=weight_dtype).to(unet.device)
        ).latent_dist.sample()
        latents = latents * 0.18215
    else:
        latents = batch["pixel_values"]

    noise = torch.randn_like(latents)
    bsz = latents.shape[0]

    timesteps = torch.randint(
        0,
        int(scheduler.config.num_train_timesteps * t_mutliplier),
        (bsz,),
        device=latents.device,
    )
    timesteps = timesteps.long()

    noisy_latents = scheduler.add_noise(latents, noise, timesteps)

    latent_model_input = noisy_latents

    encoder_hidden_states = text_encoder(
        batch["input_ids"].to(text_encoder.device)
    )[0]

    model_pred = unet(latent_model_input, timesteps, encoder_hidden_states).sample

    if scheduler.config.prediction_type == "epsilon":
        target = noise
    else:
        raise ValueError(f"Unknown prediction type {scheduler.config.prediction_type}")

    loss = (
        F.mse_loss(model_pred.float(), target.float(), reduction="none")
        .mean([1, 2, 3])
        .mean()
    )

    return loss


def train_inversion(
    unet,
    vae,
    text_encoder,
    dataloader,
    num_steps: int,
    scheduler,
    index_no_updates,
    optimizer,
    save_steps: int,
    placeholder_token_ids,
    placeholder_tokens,
    save_path: str,
    tokenizer,
    lr_scheduler,
    test_image_path: str,
    cached_latents: bool,
    accum_iter: int = 1,
    log_wandb: bool = False,
    wandb_log_prompt_cnt: int = 10,
    class_token: str = "person",
    train_inpainting: bool = False,
    mixed_precision: bool = False,
    clip_ti_decay: bool = True,
):

    progress_bar = tqdm(range(num_steps), disable=True)
    progress_bar.set_description("Steps")
    global_step = 0

    # Original Emb for TI
    orig_embeds_params = text_encoder.get_input_embeddings().weight.data.clone()

    index_updates = ~index_no_updates
    loss_sum = 0.0

    for epoch in range(math.ceil(num_steps / len(dataloader))):
        unet.eval()
        text_encoder.train()
        for batch in dataloader:

            lr_scheduler.step()

            with torch.set_grad_enabled(True):
                loss = (
                    loss_step(
                        batch,
                        unet,
                        vae,
                        text_encoder,
                        scheduler,
                        train_inpainting=train_inpainting,
                        mixed_precision=mixed_precision,
                        cached_latents=cached_latents,
                    )
                    / accum_iter
                )

                loss.backward()
                loss_sum += loss.detach().item()

                if global_step % accum_iter == 0:
                    # print gradient of text encoder embedding
                    print(
                        text_encoder.get_input_embeddings()
                        .weight.grad[index_updates, :]
                        .norm(dim=-1)
                        .mean()
                    )
                    optimizer.step()
                    optimizer.zero_grad()

                    with torch.no_grad():

                        # normalize embeddings
                        if clip_ti_decay:
                            pre_norm = (
                                text_encoder.get_input_embeddings()
                                .weight[index_updates, :]
                                .norm(dim=-1, keepdim=True)
                            )

                            lambda_ = min(1.0, 100 * lr_scheduler.get_last_lr()[0])
                            text_encoder.get_input_embeddings().weight[
                                index_updates
                            ] = F.normalize(
                                text_encoder.get_input_embeddings().weight[
                                    index_updates, :
                                ],
                                dim=-1,
                            ) * (
                                pre_norm + lambda_ * (0.4 - pre_norm)
                            )
                            print(pre_norm)

                        current_norm = (
                            text_encoder.get_input_embeddings()
                            .weight[index_updates, :]
                            .norm(dim=-1)
                        )

                        text_encoder.get_input_embeddings().weight[
                            index_no_updates
                        ] = orig_embeds_params[index_no_updates]

                        print(f"Current Norm : {current_norm}")

                global_step += 1
                progress_bar.update(1)

                logs = {
                    "loss": loss.detach().item(),
                    "lr": lr_scheduler.get_last_lr()[0],
                }
                progress_bar.set_postfix(**logs)

            # (saving every `save_steps` and wandb logging left out)

            if global_step >= num_steps:
                return


if __name__ == "__main__":
    # train(...) shrunk: STEP 1 (inversion) with cached latents on random data, one placeholder token
    tokenizer = list(range(12))
    placeholder_token_ids = [11]
    text_encoder = CLIPTextModel()
    unet = UNet2DConditionModel()
    noise_scheduler = DDPMScheduler()
    train_dataloader = [
        {"pixel_values": torch.randn(2, 4, 8, 8), "input_ids": torch.tensor([[0, 11, 3, 4, 1, 1], [0, 5, 11, 6, 7, 1]])}
        for _ in range(3)
    ]

    index_no_updates = torch.arange(len(tokenizer)) != -1

    for tok_id in placeholder_token_ids:
        index_no_updates[tok_id] = False

    unet.requires_grad_(False)

    params_to_freeze = itertools.chain(
        text_encoder.text_model.encoder.parameters(),
        text_encoder.text_model.final_layer_norm.parameters(),
        text_encoder.text_model.embeddings.position_embedding.parameters(),
    )
    for param in params_to_freeze:
        param.requires_grad = False

    vae = None
    ti_optimizer = optim.AdamW(
        text_encoder.get_input_embeddings().parameters(),
        lr=5e-4,
        betas=(0.9, 0.999),
        eps=1e-08,
        weight_decay=0.0,
    )

    lr_scheduler = get_scheduler(
        "constant",
        optimizer=ti_optimizer,
        num_warmup_steps=0,
        num_training_steps=3,
    )

    train_inversion(
        unet,
        vae,
        text_encoder,
        train_dataloader,
        3,
        cached_latents=True,
        accum_iter=1,
        scheduler=noise_scheduler,
        index_no_updates=index_no_updates,
        optimizer=ti_optimizer,
        lr_scheduler=lr_scheduler,
        save_steps=100,
        placeholder_tokens=["<s1>"],
        placeholder_token_ids=placeholder_token_ids,
        save_path=".",
        test_image_path=".",
        log_wandb=False,
        class_token="person",
        train_inpainting=False,
        mixed_precision=False,
        tokenizer=tokenizer,
        clip_ti_decay=True,
    )
