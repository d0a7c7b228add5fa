"""EfficientNet-style stem: a Conv-BN-SiLU block that subclasses nn.Sequential."""

# outcome: ok
# verify-inputs: float32(2, 3, 32, 32)
from torch import nn


class ConvBNAct(nn.Sequential):  # verify-target
    def __init__(self, in_ch: int = 3, out_ch: int = 16, kernel: int = 3, stride: int = 2) -> None:
        super().__init__(
            nn.Conv2d(in_ch, out_ch, kernel, stride, (kernel - 1) // 2, bias=False),
            nn.BatchNorm2d(out_ch),
            nn.SiLU(inplace=True),
        )
