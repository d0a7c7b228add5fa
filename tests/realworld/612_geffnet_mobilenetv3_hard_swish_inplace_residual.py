"""gen-efficientnet-pytorch's MobileNetV3: HardSwish(inplace=True) (`x.mul_(F.relu6(x + 3.).div_(6.))`) after each BatchNorm and after the 1x1 conv_head, SqueezeExcite gating `x * hard_sigmoid(x_se)`, and InvertedResidual / DepthwiseSeparableConv ending in `x += residual` on the bn output; a small block stack trained a few steps with drop_connect on."""
# outcome: ok
# source: https://github.com/rwightman/gen-efficientnet-pytorch/blob/master/geffnet/efficientnet_builder.py
# repo: rwightman/gen-efficientnet-pytorch
# category: residual
import torch
from torch import nn as nn
from torch.nn import functional as F


# ---- geffnet/activations/activations.py ----
def hard_swish(x, inplace: bool = False):
    inner = F.relu6(x + 3.).div_(6.)
    return x.mul_(inner) if inplace else x.mul(inner)


class HardSwish(nn.Module):
    def __init__(self, inplace: bool = False):
        super(HardSwish, self).__init__()
        self.inplace = inplace

    def forward(self, x):
        return hard_swish(x, self.inplace)


def hard_sigmoid(x, inplace: bool = False):
    if inplace:
        return x.add_(3.).clamp_(0., 6.).div_(6.)
    else:
        return F.relu6(x + 3.) / 6.


# ---- geffnet/conv2d_layers.py (the static-padding path of select_conv2d) ----
def select_conv2d(in_chs, out_chs, kernel_size, stride=1, padding='', dilation=1, depthwise=False, bias=False):
    groups = out_chs if depthwise else 1
    padding = ((stride - 1) + dilation * (kernel_size - 1)) // 2
    return nn.Conv2d(in_chs, out_chs, kernel_size, stride=stride, padding=padding,
                     dilation=dilation, groups=groups, bias=bias)


# ---- geffnet/efficientnet_builder.py ----
def make_divisible(v: int, divisor: int = 8, min_value: int = None):
    min_value = min_value or divisor
    new_v = max(min_value, int(v + divisor / 2) // divisor * divisor)
    if new_v < 0.9 * v:  # ensure round down does not go down by more than 10%.
        new_v += divisor
    return new_v


def drop_connect(inputs, training: bool = False, drop_connect_rate: float = 0.):
    """Apply drop connect."""
    if not training:
        return inputs

    keep_prob = 1 - drop_connect_rate
    random_tensor = keep_prob + torch.rand(
        (inputs.size()[0], 1, 1, 1), dtype=inputs.dtype, device=inputs.device)
    random_tensor.floor_()  # binarize
    output = inputs.div(keep_prob) * random_tensor
    return output


class SqueezeExcite(nn.Module):

    def __init__(self, in_chs, se_ratio=0.25, reduced_base_chs=None, act_layer=nn.ReLU, gate_fn=hard_sigmoid, divisor=1):
        super(SqueezeExcite, self).__init__()
        self.gate_fn = gate_fn
        reduced_chs = make_divisible((reduced_base_chs or in_chs) * se_ratio, divisor)
        self.avg_pool = nn.AdaptiveAvgPool2d(1)
        self.conv_reduce = nn.Conv2d(in_chs, reduced_chs, 1, bias=True)
        self.act1 = act_layer(inplace=True)
        self.conv_expand = nn.Conv2d(reduced_chs, in_chs, 1, bias=True)

    def forward(self, x):
        # tensor.view + mean bad for ONNX export (produces mess of gather ops that break TensorRT)
        x_se = self.avg_pool(x)
        x_se = self.conv_reduce(x_se)
        x_se = self.act1(x_se)
        x_se = self.conv_expand(x_se)
        x = x * self.gate_fn(x_se)
        return x


class DepthwiseSeparableConv(nn.Module):
    def __init__(self, in_chs, out_chs, dw_kernel_size=3,
                 stride=1, pad_type='', act_layer=nn.ReLU, noskip=False,
                 pw_kernel_size=1, pw_act=False, se_ratio=0., se_kwargs=None,
                 norm_layer=nn.BatchNorm2d, norm_kwargs=None, drop_connect_rate=0.):
        super(DepthwiseSeparableConv, self).__init__()
        assert stride in [1, 2]
        norm_kwargs = norm_kwargs or {}
        self.has_residual = (stride == 1 and in_chs == out_chs) and not noskip
        self.drop_connect_rate = drop_connect_rate

        self.conv_dw = select_conv2d(
            in_chs, in_chs, dw_kernel_size, stride=stride, padding=pad_type, depthwise=True)
        self.bn1 = norm_layer(in_chs, **norm_kwargs)
        self.act1 = act_layer(inplace=True)

        # Squeeze-and-excitation
        if se_ratio is not None and se_ratio > 0.:
            self.se = SqueezeExcite(in_chs, se_ratio=se_ratio, **se_kwargs)
        else:
            self.se = nn.Identity()

        self.conv_pw = select_conv2d(in_chs, out_chs, pw_kernel_size, padding=pad_type)
        self.bn2 = norm_layer(out_chs, **norm_kwargs)
        self.act2 = act_layer(inplace=True) if pw_act else nn.Identity()

    def forward(self, x):
        residual = x

        x = self.conv_dw(x)
        x = self.bn1(x)
        x = self.act1(x)

        x = self.se(x)

        x = self.conv_pw(x)
        x = self.bn2(x)
        x = self.act2(x)

        if self.has_residual:
            if self.drop_connect_rate > 0.:
                x = drop_connect(x, self.training, self.drop_connect_rate)
            x += residual
        return x


class InvertedResidual(nn.Module):
    """ Inverted residual block w/ optional SE"""

    def __init__(self, in_chs, out_chs, dw_kernel_size=3,
                 stride=1, pad_type='', act_layer=nn.ReLU, noskip=False,
                 exp_ratio=1.0, exp_kernel_size=1, pw_kernel_size=1,
                 se_ratio=0., se_kwargs=None, norm_layer=nn.BatchNorm2d, norm_kwargs=None,
                 conv_kwargs=None, drop_connect_rate=0.):
        super(InvertedResidual, self).__init__()
        norm_kwargs = norm_kwargs or {}
        conv_kwargs = conv_kwargs or {}
        mid_chs: int = make_divisible(in_chs * exp_ratio)
        self.has_residual = (in_chs == out_chs and stride == 1) and not noskip
        self.drop_connect_rate = drop_connect_rate

        # Point-wise expansion
        self.conv_pw = select_conv2d(in_chs, mid_chs, exp_kernel_size, padding=pad_type, **conv_kwargs)
        self.bn1 = norm_layer(mid_chs, **norm_kwargs)
        self.act1 = act_layer(inplace=True)

        # Depth-wise convolution
        self.conv_dw = select_conv2d(
            mid_chs, mid_chs, dw_kernel_size, stride=stride, padding=pad_type, depthwise=True, **conv_kwargs)
        self.bn2 = norm_layer(mid_chs, **norm_kwargs)
        self.act2 = act_layer(inplace=True)

        # Squeeze-and-excitation
        if se_ratio is not None and se_ratio > 0.:
            self.se = SqueezeExcite(mid_chs, se_ratio=se_ratio, **se_kwargs)
        else:
            self.se = nn.Identity()  # for jit.script compat

        # Point-wise linear projection
        self.conv_pwl = select_conv2d(mid_chs, out_chs, pw_kernel_size, padding=pad_type, **conv_kwargs)
        self.bn3 = norm_layer(out_chs, **norm_kwargs)

    def forward(self, x):
        residual = x

        # Point-wise expansion
        x = self.conv_pw(x)
        x = self.bn1(x)
        x = self.act1(x)

        # Depth-wise convolution
        x = self.conv_dw(x)
        x = self.bn2(x)
        x = self.act2(x)

        # Squeeze-and-excitation
        x = self.se(x)

        # Point-wise linear projection
        x = self.conv_pwl(x)
        x = self.bn3(x)

        if self.has_residual:
            if self.drop_connect_rate > 0.:
                x = drop_connect(x, self.training, self.drop_connect_rate)
            x += residual
        return x


# ---- geffnet/mobilenetv3.py (MobileNetV3; the block stack written out instead of decoded from an arch string) ----
class MobileNetV3(nn.Module):
    def __init__(self, num_classes=1000, in_chans=3, stem_size=16, num_features=1280, head_bias=True,
                 pad_type='', act_layer=HardSwish, drop_rate=0., drop_connect_rate=0.,
                 norm_layer=nn.BatchNorm2d, norm_kwargs=None):
        super(MobileNetV3, self).__init__()
        self.drop_rate = drop_rate
        se_kwargs = dict(act_layer=nn.ReLU, gate_fn=hard_sigmoid, reduced_base_chs=None, divisor=8)

        self.conv_stem = select_conv2d(in_chans, stem_size, 3, stride=2, padding=pad_type)
        self.bn1 = norm_layer(stem_size)
        self.act1 = act_layer(inplace=True)

        # ds_r1_k3_s1_e1_c16_nre, ir_r1_k3_s2_e4_c24_nre, ir_r1_k3_s1_e3_c24_nre,
        # ir_r1_k5_s2_e3_c40_se0.25_nre, ir_r1_k3_s1_e6_c40_se0.25 (hard_swish)
        self.blocks = nn.Sequential(
            DepthwiseSeparableConv(16, 16, 3, stride=1, act_layer=nn.ReLU, drop_connect_rate=drop_connect_rate * 0 / 5),
            InvertedResidual(16, 24, 3, stride=2, act_layer=nn.ReLU, exp_ratio=4., drop_connect_rate=drop_connect_rate * 1 / 5),
            InvertedResidual(24, 24, 3, stride=1, act_layer=nn.ReLU, exp_ratio=3., drop_connect_rate=drop_connect_rate * 2 / 5),
            InvertedResidual(24, 40, 5, stride=2, act_layer=nn.ReLU, exp_ratio=3., se_ratio=0.25,
                             se_kwargs=se_kwargs, drop_connect_rate=drop_connect_rate * 3 / 5),
            InvertedResidual(40, 40, 3, stride=1, act_layer=HardSwish, exp_ratio=6., se_ratio=0.25,
                             se_kwargs=se_kwargs, drop_connect_rate=drop_connect_rate * 4 / 5),
        )
        in_chs = 40

        self.global_pool = nn.AdaptiveAvgPool2d(1)
        self.conv_head = select_conv2d(in_chs, num_features, 1, padding=pad_type, bias=head_bias)
        self.act2 = act_layer(inplace=True)
        self.classifier = nn.Linear(num_features, num_classes)

    def features(self, x):
        x = self.conv_stem(x)
        x = self.bn1(x)
        x = self.act1(x)
        x = self.blocks(x)
        x = self.global_pool(x)
        x = self.conv_head(x)
        x = self.act2(x)
        return x

    def forward(self, x):
        x = self.features(x)
        x = x.flatten(1)
        if self.drop_rate > 0.:
            x = F.dropout(x, p=self.drop_rate, training=self.training)
        return self.classifier(x)


if __name__ == '__main__':
    torch.manual_seed(0)
    model = MobileNetV3(num_classes=10, num_features=64, drop_rate=0.2, drop_connect_rate=0.2)
    optimizer = torch.optim.RMSprop(model.parameters(), lr=1e-3, alpha=0.9, eps=1e-3, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    model.train()
    for step in range(3):
        # random 64x64 batches instead of ImageNet
        input = torch.randn(4, 3, 64, 64)
        target = torch.randint(0, 10, (4,))
        output = model(input)
        loss = criterion(output, target)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
