"""A U-Net block picks its layers with getattr(nn, 'Conv{}d'.format(dimensions)), collects them through a static helper into a ModuleList and wraps them in nn.Sequential(*block); the residual is added in place to the ReLU output."""
# outcome: inplace-error
# far-apart
import torch
import torch.nn as nn


class ConvolutionalBlock(nn.Module):
    def __init__(self, dimensions, in_channels, out_channels, activation="ReLU"):
        super().__init__()
        block = nn.ModuleList()
        conv_class = getattr(nn, "Conv{}d".format(dimensions))
        conv_layer = conv_class(in_channels, out_channels, 3, padding=1)
        activation_layer = None
        if activation is not None:
            activation_layer = getattr(nn, activation)()
        self.add_if_not_none(block, conv_layer)
        self.add_if_not_none(block, activation_layer)
        self.block = nn.Sequential(*block)

    def forward(self, x):
        return self.block(x)  # saved-by

    @staticmethod
    def add_if_not_none(module_list, module):
        if module is not None:
            module_list.append(module)


class EncodingBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = ConvolutionalBlock(2, in_channels, out_channels)
        self.conv_residual = ConvolutionalBlock(2, in_channels, out_channels, activation=None)

    def forward(self, x):
        connection = self.conv_residual(x)
        x = self.conv1(x)
        # ReluBackward0 needs the ReLU output x; the residual is added into it.
        x += connection  # error: IPL001
        return x


def run() -> None:
    torch.manual_seed(0)
    EncodingBlock(1, 4)(torch.randn(2, 1, 8, 8)).sum().backward()
