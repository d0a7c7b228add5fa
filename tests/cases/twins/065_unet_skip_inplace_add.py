"""Twin of 065_unet_skip_inplace_add.py, written out of place by hand: Tiny U-Net whose decoder merges the upsampled features into the encoder skip in place; MaxPool2d saved that skip."""
import torch
import torch.nn as nn
import torch.nn.functional as F


def double_conv(c_in, c_out):
    return nn.Sequential(
        nn.Conv2d(c_in, c_out, 3, padding=1, bias=False),
        nn.BatchNorm2d(c_out),
        nn.ReLU(inplace=True),
        nn.Conv2d(c_out, c_out, 3, padding=1),
    )


class TinyUNet(nn.Module):
    def __init__(self, c=4):
        super().__init__()
        self.enc1 = double_conv(1, c)
        self.pool = nn.MaxPool2d(2)
        self.bottleneck = double_conv(c, c)
        self.up = nn.ConvTranspose2d(c, c, 2, stride=2)
        self.dec1 = double_conv(c, c)
        self.out = nn.Conv2d(c, 1, 1)

    def encode(self, x):
        skip = self.enc1(x)
        down = self.pool(skip)
        return self.bottleneck(down), skip

    def decode(self, z, skip):
        merged = skip + self.up(z)
        return self.out(self.dec1(merged))

    def forward(self, x):
        z, skip = self.encode(x)
        return self.decode(z, skip)


def run() -> None:
    torch.manual_seed(0)
    net = TinyUNet()
    images = torch.randn(2, 1, 8, 8)
    masks = (torch.rand(2, 1, 8, 8) > 0.5).float()
    loss = F.binary_cross_entropy_with_logits(net(images), masks)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    net = TinyUNet()
    images = torch.randn(2, 1, 8, 8)
    masks = (torch.rand(2, 1, 8, 8) > 0.5).float()
    loss = F.binary_cross_entropy_with_logits(net(images), masks)
    loss.backward()
    return {name: p.grad for name, p in net.named_parameters()}
