"""rosinality's StyleGAN2 train loop: G/D toggled with `requires_grad(model, flag)`, the R1 penalty on `real_img.requires_grad = True`, lazy path-length regularization with `weighted_path_loss += 0 * fake_img[0, 0, 0, 0]`, and the EMA generator kept by `accumulate`: `par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)`."""
# outcome: ok
# source: https://github.com/rosinality/stylegan2-pytorch/blob/master/train.py
# repo: rosinality/stylegan2-pytorch
# category: trainer
import contextlib
import math
import random
from types import SimpleNamespace

import torch
from torch import nn, autograd, optim
from torch.nn import functional as F

wandb = None


# ---- stand-ins: distributed.py on one process, op/conv2d_gradfix, a small mapping + synthesis
# generator and a conv discriminator instead of model.py (its fused CUDA ops are not built here) ----
def get_rank():
    return 0


def get_world_size():
    return 1


def reduce_sum(tensor):
    return tensor


def reduce_loss_dict(loss_dict):
    return loss_dict


class conv2d_gradfix:
    no_weight_gradients = staticmethod(contextlib.nullcontext)


class Generator(nn.Module):
    def __init__(self, size, style_dim, n_latent=4):
        super().__init__()
        self.size, self.style_dim, self.n_latent = size, style_dim, n_latent
        self.style = nn.Sequential(nn.Linear(style_dim, style_dim), nn.LeakyReLU(0.2), nn.Linear(style_dim, style_dim))
        self.to_feat = nn.Linear(style_dim, 16 * 4 * 4)
        self.convs = nn.ModuleList([nn.Conv2d(16, 16, 3, padding=1) for _ in range(n_latent - 1)])
        self.mods = nn.ModuleList([nn.Linear(style_dim, 16) for _ in range(n_latent - 1)])
        self.to_rgb = nn.Conv2d(16, 3, 1)

    def forward(self, styles, return_latents=False):
        styles = [self.style(s) for s in styles]
        if len(styles) < 2:
            latent = styles[0].unsqueeze(1).repeat(1, self.n_latent, 1)
        else:
            inject_index = random.randint(1, self.n_latent - 1)
            latent = styles[0].unsqueeze(1).repeat(1, inject_index, 1)
            latent2 = styles[1].unsqueeze(1).repeat(1, self.n_latent - inject_index, 1)
            latent = torch.cat([latent, latent2], 1)
        out = self.to_feat(latent[:, 0]).view(-1, 16, 4, 4)
        for i, (conv, mod) in enumerate(zip(self.convs, self.mods)):
            out = F.interpolate(out, scale_factor=2) if out.shape[-1] < self.size else out
            out = F.leaky_relu(conv(out * mod(latent[:, i + 1]).unsqueeze(-1).unsqueeze(-1)), 0.2)
        image = self.to_rgb(out)
        if return_latents:
            return image, latent
        return image, None


class Discriminator(nn.Module):
    def __init__(self, size):
        super().__init__()
        self.convs = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.LeakyReLU(0.2), nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.LeakyReLU(0.2))
        self.final = nn.Linear(32 * (size // 2) ** 2, 1)

    def forward(self, input):
        return self.final(self.convs(input).flatten(1))


# ---- train.py ----
def requires_grad(model, flag=True):
    for p in model.parameters():
        p.requires_grad = flag


def accumulate(model1, model2, decay=0.999):
    par1 = dict(model1.named_parameters())
    par2 = dict(model2.named_parameters())

    for k in par1.keys():
        par1[k].data.mul_(decay).add_(par2[k].data, alpha=1 - decay)


def sample_data(loader):
    while True:
        for batch in loader:
            yield batch


def d_logistic_loss(real_pred, fake_pred):
    real_loss = F.softplus(-real_pred)
    fake_loss = F.softplus(fake_pred)

    return real_loss.mean() + fake_loss.mean()


def d_r1_loss(real_pred, real_img):
    with conv2d_gradfix.no_weight_gradients():
        grad_real, = autograd.grad(
            outputs=real_pred.sum(), inputs=real_img, create_graph=True
        )
    grad_penalty = grad_real.pow(2).reshape(grad_real.shape[0], -1).sum(1).mean()

    return grad_penalty


def g_nonsaturating_loss(fake_pred):
    loss = F.softplus(-fake_pred).mean()

    return loss


def g_path_regularize(fake_img, latents, mean_path_length, decay=0.01):
    noise = torch.randn_like(fake_img) / math.sqrt(
        fake_img.shape[2] * fake_img.shape[3]
    )
    grad, = autograd.grad(
        outputs=(fake_img * noise).sum(), inputs=latents, create_graph=True
    )
    path_lengths = torch.sqrt(grad.pow(2).sum(2).mean(1))

    path_mean = mean_path_length + decay * (path_lengths.mean() - mean_path_length)

    path_penalty = (path_lengths - path_mean).pow(2).mean()

    return path_penalty, path_mean.detach(), path_lengths


def make_noise(batch, latent_dim, n_noise, device):
    if n_noise == 1:
        return torch.randn(batch, latent_dim, device=device)

    noises = torch.randn(n_noise, batch, latent_dim, device=device).unbind(0)

    return noises


def mixing_noise(batch, latent_dim, prob, device):
    if prob > 0 and random.random() < prob:
        return make_noise(batch, latent_dim, 2, device)

    else:
        return [make_noise(batch, latent_dim, 1, device)]


def set_grad_none(model, targets):
    for n, p in model.named_parameters():
        if n in targets:
            p.grad = None


def train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device):
    loader = sample_data(loader)

    pbar = range(args.iter)


    mean_path_length = 0

    d_loss_val = 0
    r1_loss = torch.tensor(0.0, device=device)
    g_loss_val = 0
    path_loss = torch.tensor(0.0, device=device)
    path_lengths = torch.tensor(0.0, device=device)
    mean_path_length_avg = 0
    loss_dict = {}

    if args.distributed:
        g_module = generator.module
        d_module = discriminator.module

    else:
        g_module = generator
        d_module = discriminator

    accum = 0.5 ** (32 / (10 * 1000))
    ada_aug_p = args.augment_p if args.augment_p > 0 else 0.0
    r_t_stat = 0

    if args.augment and args.augment_p == 0:
        ada_augment = AdaptiveAugment(args.ada_target, args.ada_length, 8, device)

    sample_z = torch.randn(args.n_sample, args.latent, device=device)

    for idx in pbar:
        i = idx + args.start_iter

        if i > args.iter:
            print("Done!")

            break

        real_img = next(loader)
        real_img = real_img.to(device)

        requires_grad(generator, False)
        requires_grad(discriminator, True)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)

        if args.augment:
            real_img_aug, _ = augment(real_img, ada_aug_p)
            fake_img, _ = augment(fake_img, ada_aug_p)

        else:
            real_img_aug = real_img

        fake_pred = discriminator(fake_img)
        real_pred = discriminator(real_img_aug)
        d_loss = d_logistic_loss(real_pred, fake_pred)

        loss_dict["d"] = d_loss
        loss_dict["real_score"] = real_pred.mean()
        loss_dict["fake_score"] = fake_pred.mean()

        discriminator.zero_grad()
        d_loss.backward()
        d_optim.step()

        if args.augment and args.augment_p == 0:
            ada_aug_p = ada_augment.tune(real_pred)
            r_t_stat = ada_augment.r_t_stat

        d_regularize = i % args.d_reg_every == 0

        if d_regularize:
            real_img.requires_grad = True

            if args.augment:
                real_img_aug, _ = augment(real_img, ada_aug_p)

            else:
                real_img_aug = real_img

            real_pred = discriminator(real_img_aug)
            r1_loss = d_r1_loss(real_pred, real_img)

            discriminator.zero_grad()
            (args.r1 / 2 * r1_loss * args.d_reg_every + 0 * real_pred[0]).backward()

            d_optim.step()

        loss_dict["r1"] = r1_loss

        requires_grad(generator, True)
        requires_grad(discriminator, False)

        noise = mixing_noise(args.batch, args.latent, args.mixing, device)
        fake_img, _ = generator(noise)

        if args.augment:
            fake_img, _ = augment(fake_img, ada_aug_p)

        fake_pred = discriminator(fake_img)
        g_loss = g_nonsaturating_loss(fake_pred)

        loss_dict["g"] = g_loss

        generator.zero_grad()
        g_loss.backward()
        g_optim.step()

        g_regularize = i % args.g_reg_every == 0

        if g_regularize:
            path_batch_size = max(1, args.batch // args.path_batch_shrink)
            noise = mixing_noise(path_batch_size, args.latent, args.mixing, device)
            fake_img, latents = generator(noise, return_latents=True)

            path_loss, mean_path_length, path_lengths = g_path_regularize(
                fake_img, latents, mean_path_length
            )

            generator.zero_grad()
            weighted_path_loss = args.path_regularize * args.g_reg_every * path_loss

            if args.path_batch_shrink:
                weighted_path_loss += 0 * fake_img[0, 0, 0, 0]

            weighted_path_loss.backward()

            g_optim.step()

            mean_path_length_avg = (
                reduce_sum(mean_path_length).item() / get_world_size()
            )

        loss_dict["path"] = path_loss
        loss_dict["path_length"] = path_lengths.mean()

        accumulate(g_ema, g_module, accum)

        loss_reduced = reduce_loss_dict(loss_dict)

        d_loss_val = loss_reduced["d"].mean().item()
        g_loss_val = loss_reduced["g"].mean().item()
        r1_val = loss_reduced["r1"].mean().item()
        path_loss_val = loss_reduced["path"].mean().item()
        real_score_val = loss_reduced["real_score"].mean().item()
        fake_score_val = loss_reduced["fake_score"].mean().item()
        path_length_val = loss_reduced["path_length"].mean().item()

        if get_rank() == 0:
            print(
                (
                    f"d: {d_loss_val:.4f}; g: {g_loss_val:.4f}; r1: {r1_val:.4f}; "
                    f"path: {path_loss_val:.4f}; mean path: {mean_path_length_avg:.4f}; "
                    f"augment: {ada_aug_p:.4f}"
                )
            )


if __name__ == "__main__":
    torch.manual_seed(0)
    random.seed(0)
    device = "cpu"
    args = SimpleNamespace(size=16, latent=16, n_mlp=2, batch=4, n_sample=4, iter=4, start_iter=0, mixing=0.9,
                           r1=10, path_regularize=2, path_batch_shrink=2, d_reg_every=2, g_reg_every=2,
                           augment=False, augment_p=0, ada_target=0.6, ada_length=500000, distributed=False,
                           wandb=False, lr=0.002)
    generator = Generator(args.size, args.latent).to(device)
    discriminator = Discriminator(args.size).to(device)
    g_ema = Generator(args.size, args.latent).to(device)
    g_ema.eval()
    accumulate(g_ema, generator, 0)

    g_reg_ratio = args.g_reg_every / (args.g_reg_every + 1)
    d_reg_ratio = args.d_reg_every / (args.d_reg_every + 1)

    g_optim = optim.Adam(
        generator.parameters(),
        lr=args.lr * g_reg_ratio,
        betas=(0 ** g_reg_ratio, 0.99 ** g_reg_ratio),
    )
    d_optim = optim.Adam(
        discriminator.parameters(),
        lr=args.lr * d_reg_ratio,
        betas=(0 ** d_reg_ratio, 0.99 ** d_reg_ratio),
    )
    loader = [torch.randn(args.batch, 3, args.size, args.size) for _ in range(3)]
    train(args, loader, generator, discriminator, g_optim, d_optim, g_ema, device)
