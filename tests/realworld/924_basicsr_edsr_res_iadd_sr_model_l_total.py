"""BasicSR's SRModel training EDSR for a few iterations: EDSR.forward does `res = self.conv_after_body(self.body(x)); res += x` on the fresh conv output, ResidualBlockNoBN runs nn.ReLU(inplace=True) on conv1's output, and optimize_parameters builds `l_total = 0; l_total += l_pix` before backward. Safe."""
# outcome: ok
# source: https://github.com/xinntao/BasicSR/blob/d21eac885b6de90a7adef7cc59e937dbdbb200b1/basicsr/models/archs/edsr_arch.py
# repo: xinntao/BasicSR
# category: residual
import math
from collections import OrderedDict

import torch
from torch import nn as nn


# ---- basicsr/models/archs/arch_util.py (the parts edsr_arch uses) ----
def make_layer(basic_block, num_basic_block, **kwarg):
    layers = []
    for _ in range(num_basic_block):
        layers.append(basic_block(**kwarg))
    return nn.Sequential(*layers)


class ResidualBlockNoBN(nn.Module):
    def __init__(self, num_feat=64, res_scale=1, pytorch_init=False):
        super(ResidualBlockNoBN, self).__init__()
        self.res_scale = res_scale
        self.conv1 = nn.Conv2d(num_feat, num_feat, 3, 1, 1, bias=True)
        self.conv2 = nn.Conv2d(num_feat, num_feat, 3, 1, 1, bias=True)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        identity = x
        out = self.conv2(self.relu(self.conv1(x)))
        return identity + out * self.res_scale


class Upsample(nn.Sequential):
    def __init__(self, scale, num_feat):
        m = []
        if (scale & (scale - 1)) == 0:  # scale = 2^n
            for _ in range(int(math.log(scale, 2))):
                m.append(nn.Conv2d(num_feat, 4 * num_feat, 3, 1, 1))
                m.append(nn.PixelShuffle(2))
        elif scale == 3:
            m.append(nn.Conv2d(num_feat, 9 * num_feat, 3, 1, 1))
            m.append(nn.PixelShuffle(3))
        else:
            raise ValueError(f'scale {scale} is not supported. '
                             'Supported scales: 2^n and 3.')
        super(Upsample, self).__init__(*m)


# ---- basicsr/models/archs/edsr_arch.py ----
class EDSR(nn.Module):
    def __init__(self,
                 num_in_ch,
                 num_out_ch,
                 num_feat=64,
                 num_block=16,
                 upscale=4,
                 res_scale=1,
                 img_range=255.,
                 rgb_mean=(0.4488, 0.4371, 0.4040)):
        super(EDSR, self).__init__()

        self.img_range = img_range
        self.mean = torch.Tensor(rgb_mean).view(1, 3, 1, 1)

        self.conv_first = nn.Conv2d(num_in_ch, num_feat, 3, 1, 1)
        self.body = make_layer(
            ResidualBlockNoBN,
            num_block,
            num_feat=num_feat,
            res_scale=res_scale,
            pytorch_init=True)
        self.conv_after_body = nn.Conv2d(num_feat, num_feat, 3, 1, 1)
        self.upsample = Upsample(upscale, num_feat)
        self.conv_last = nn.Conv2d(num_feat, num_out_ch, 3, 1, 1)

    def forward(self, x):
        self.mean = self.mean.type_as(x)

        x = (x - self.mean) * self.img_range
        x = self.conv_first(x)
        res = self.conv_after_body(self.body(x))
        res += x

        x = self.conv_last(self.upsample(res))
        x = x / self.img_range + self.mean

        return x


# ---- basicsr/models/sr_model.py + base_model.py (trimmed: no logger, no perceptual loss, no validation) ----
class SRModel():
    def __init__(self, opt):
        self.opt = opt
        self.device = torch.device('cpu')
        self.net_g = EDSR(**opt['network_g']).to(self.device)
        self.init_training_settings()

    def init_training_settings(self):
        self.net_g.train()
        self.cri_pix = nn.L1Loss()
        self.cri_perceptual = None
        self.setup_optimizers()

    def setup_optimizers(self):
        optim_params = []
        for k, v in self.net_g.named_parameters():
            if v.requires_grad:
                optim_params.append(v)
        self.optimizer_g = torch.optim.Adam(optim_params, lr=1e-4, betas=(0.9, 0.99))

    def feed_data(self, data):
        self.lq = data['lq'].to(self.device)
        if 'gt' in data:
            self.gt = data['gt'].to(self.device)

    def optimize_parameters(self, current_iter):
        self.optimizer_g.zero_grad()
        self.output = self.net_g(self.lq)

        l_total = 0
        loss_dict = OrderedDict()
        # pixel loss
        if self.cri_pix:
            l_pix = self.cri_pix(self.output, self.gt)
            l_total += l_pix
            loss_dict['l_pix'] = l_pix
        # perceptual loss
        if self.cri_perceptual:
            l_percep, l_style = self.cri_perceptual(self.output, self.gt)
            if l_percep is not None:
                l_total += l_percep
                loss_dict['l_percep'] = l_percep
            if l_style is not None:
                l_total += l_style
                loss_dict['l_style'] = l_style

        l_total.backward()
        self.optimizer_g.step()

        self.log_dict = self.reduce_loss_dict(loss_dict)

    def reduce_loss_dict(self, loss_dict):
        with torch.no_grad():
            log_dict = OrderedDict()
            for name, value in loss_dict.items():
                log_dict[name] = value.mean().item()

            return log_dict


if __name__ == '__main__':
    # train.py's loop over a few random (lq, gt) pairs instead of the paired DIV2K loader
    opt = {'dist': False, 'network_g': dict(num_in_ch=3, num_out_ch=3, num_feat=16, num_block=2, upscale=2, res_scale=1)}
    model = SRModel(opt)
    for current_iter in range(1, 4):
        train_data = {'lq': torch.rand(2, 3, 8, 8), 'gt': torch.rand(2, 3, 16, 16)}
        model.feed_data(train_data)
        model.optimize_parameters(current_iter)
        print(current_iter, model.log_dict)
