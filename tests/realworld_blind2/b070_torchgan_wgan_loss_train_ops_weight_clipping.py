"""torchgan WGAN losses: loss objects own the training step (train_ops); the discriminator loss clips every critic parameter in place through .data before its step, next to a gradient-penalty loss built with autograd.grad(create_graph=True), all driven by a trainer loop."""
# outcome: ok
# source: https://github.com/torchgan/torchgan/blob/master/torchgan/losses/wasserstein.py
# repo: torchgan/torchgan
# category: leaf
import torch
import torch.autograd as autograd
import torch.nn as nn


# torchgan/utils
def reduce(x, reduction=None):
    if reduction == "mean":
        return torch.mean(x)
    elif reduction == "sum":
        return torch.sum(x)
    else:
        return x


# torchgan/losses/loss.py
class GeneratorLoss(nn.Module):
    def __init__(self, reduction="mean", override_train_ops=None):
        super(GeneratorLoss, self).__init__()
        self.reduction = reduction
        self.override_train_ops = override_train_ops
        self.arg_map = {}

    def train_ops(self, generator, discriminator, optimizer_generator, device, batch_size, labels=None):
        if self.override_train_ops is not None:
            return self.override_train_ops(generator, discriminator, optimizer_generator, device, batch_size, labels)
        else:
            noise = torch.randn(batch_size, generator.encoding_dims, device=device)
            optimizer_generator.zero_grad()
            fake = generator(noise)
            dgz = discriminator(fake)
            loss = self.forward(dgz)
            loss.backward()
            optimizer_generator.step()
            return loss.item()


class DiscriminatorLoss(nn.Module):
    def __init__(self, reduction="mean", override_train_ops=None):
        super(DiscriminatorLoss, self).__init__()
        self.reduction = reduction
        self.override_train_ops = override_train_ops
        self.arg_map = {}

    def train_ops(self, generator, discriminator, optimizer_discriminator, real_inputs, device, labels=None):
        if self.override_train_ops is not None:
            return self.override_train_ops(self, generator, discriminator, optimizer_discriminator,
                                           real_inputs, device, labels)
        else:
            batch_size = real_inputs.size(0)
            noise = torch.randn(batch_size, generator.encoding_dims, device=device)
            optimizer_discriminator.zero_grad()
            dx = discriminator(real_inputs)
            fake = generator(noise)
            dgz = discriminator(fake.detach())
            loss = self.forward(dx, dgz)
            loss.backward()
            optimizer_discriminator.step()
            return loss.item()


# torchgan/losses/wasserstein.py
def wasserstein_generator_loss(fgz, reduction="mean"):
    return reduce(-1.0 * fgz, reduction)


def wasserstein_discriminator_loss(fx, fgz, reduction="mean"):
    return reduce(fgz - fx, reduction)


def wasserstein_gradient_penalty(interpolate, d_interpolate, reduction="mean"):
    grad_outputs = torch.ones_like(d_interpolate)
    gradients = autograd.grad(
        outputs=d_interpolate,
        inputs=interpolate,
        grad_outputs=grad_outputs,
        create_graph=True,
        retain_graph=True,
        only_inputs=True,
    )[0]

    gradient_penalty = (gradients.norm(2) - 1) ** 2
    return reduce(gradient_penalty, reduction)


class WassersteinGeneratorLoss(GeneratorLoss):
    def forward(self, fgz):
        return wasserstein_generator_loss(fgz, self.reduction)


class WassersteinDiscriminatorLoss(DiscriminatorLoss):
    def __init__(self, reduction="mean", clip=None, override_train_ops=None):
        super(WassersteinDiscriminatorLoss, self).__init__(reduction, override_train_ops)
        if (isinstance(clip, tuple) or isinstance(clip, list)) and len(clip) > 1:
            self.clip = clip
        else:
            self.clip = None

    def forward(self, fx, fgz):
        return wasserstein_discriminator_loss(fx, fgz, self.reduction)

    def train_ops(self, generator, discriminator, optimizer_discriminator, real_inputs, device, labels=None):
        if self.override_train_ops is not None:
            return self.override_train_ops(
                generator,
                discriminator,
                optimizer_discriminator,
                real_inputs,
                device,
                labels,
            )
        else:
            if self.clip is not None:
                for p in discriminator.parameters():
                    p.data.clamp_(self.clip[0], self.clip[1])
            return super(WassersteinDiscriminatorLoss, self).train_ops(
                generator,
                discriminator,
                optimizer_discriminator,
                real_inputs,
                device,
                labels,
            )


class WassersteinGradientPenalty(DiscriminatorLoss):
    def __init__(self, reduction="mean", lambd=10.0, override_train_ops=None):
        super(WassersteinGradientPenalty, self).__init__(reduction, override_train_ops)
        self.lambd = lambd
        self.override_train_ops = override_train_ops

    def forward(self, interpolate, d_interpolate):
        return wasserstein_gradient_penalty(interpolate, d_interpolate, self.reduction)

    def train_ops(self, generator, discriminator, optimizer_discriminator, real_inputs, device, labels=None):
        if self.override_train_ops is not None:
            return self.override_train_ops(self, generator, discriminator, optimizer_discriminator,
                                           real_inputs, labels)
        else:
            batch_size = real_inputs.size(0)
            noise = torch.randn(batch_size, generator.encoding_dims, device=device)
            optimizer_discriminator.zero_grad()
            fake = generator(noise)
            eps = torch.rand(1).item()
            interpolate = eps * real_inputs + (1 - eps) * fake
            d_interpolate = discriminator(interpolate)
            loss = self.forward(interpolate, d_interpolate)
            weighted_loss = self.lambd * loss
            weighted_loss.backward()
            optimizer_discriminator.step()
            return loss.item()


# torchgan/models (small stand-ins for the DCGAN generator and discriminator)
class Generator(nn.Module):
    def __init__(self, encoding_dims=8, out_size=16):
        super(Generator, self).__init__()
        self.encoding_dims = encoding_dims
        self.model = nn.Sequential(nn.Linear(encoding_dims, 16), nn.BatchNorm1d(16),
                                   nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, out_size), nn.Tanh())

    def forward(self, z):
        return self.model(z)


class Discriminator(nn.Module):
    def __init__(self, in_size=16):
        super(Discriminator, self).__init__()
        self.model = nn.Sequential(nn.Linear(in_size, 16), nn.LeakyReLU(0.2, inplace=True), nn.Linear(16, 1))

    def forward(self, x):
        return self.model(x)


# torchgan/trainer: one train_iter calls each loss's train_ops
if __name__ == "__main__":
    device = torch.device("cpu")
    generator = Generator()
    discriminator = Discriminator()
    optim_g = torch.optim.RMSprop(generator.parameters(), lr=5e-5)
    optim_d = torch.optim.RMSprop(discriminator.parameters(), lr=5e-5)
    losses = [WassersteinGeneratorLoss(), WassersteinDiscriminatorLoss(clip=(-0.01, 0.01)),
              WassersteinGradientPenalty()]
    for epoch in range(3):
        real = torch.rand(4, 16) * 2 - 1
        for loss in losses:
            if isinstance(loss, GeneratorLoss):
                value = loss.train_ops(generator, discriminator, optim_g, device, real.size(0))
            else:
                value = loss.train_ops(generator, discriminator, optim_d, real, device)
            print(epoch, type(loss).__name__, value)
