"""Twin of 153_subclass_passes_config_through_kwargs_dict_residual_iadd.py, written out of place by hand: A 2D U-Net subclass fills a kwargs dict with its defaults, updates it with the user's keywords and passes it on with super().__init__(**kwargs); with residual=True the block adds the shortcut into the ReLU output in place."""
import torch
import torch.nn as nn


class ConvBlock(nn.Module):
    def __init__(self, cin, cout):
        super().__init__()
        self.block = nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1), nn.ReLU())

    def forward(self, x):
        return self.block(x)


class UNet(nn.Module):
    def __init__(self, in_channels=1, dimensions=3, residual=False, width=8):
        super().__init__()
        self.residual = residual
        self.conv = ConvBlock(in_channels, width)
        if residual:
            self.shortcut = nn.Conv2d(in_channels, width, 1)

    def forward(self, x):
        out = self.conv(x)
        if self.residual:
            out = out + self.shortcut(x)
        return out


class UNet2D(UNet):
    def __init__(self, *args, **user_kwargs):
        kwargs = {}
        kwargs["dimensions"] = 2
        kwargs["width"] = 4
        kwargs.update(user_kwargs)
        super().__init__(*args, **kwargs)


def run() -> None:
    torch.manual_seed(0)
    model = UNet2D(in_channels=1, residual=True)
    model(torch.randn(2, 1, 8, 8)).sum().backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = UNet2D(in_channels=1, residual=True)
    model(torch.randn(2, 1, 8, 8)).sum().backward()
    return {name: p.grad for name, p in model.named_parameters()}
