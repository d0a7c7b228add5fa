"""Anomaly Prediction train.py as the maintainer fixed it: both backwards run first, then optimizer_D.step() and optimizer_G.step()."""
# outcome: ok
# source: https://github.com/feiyuhuahuo/Anomaly_Prediction/issues/11
# repo: feiyuhuahuo/Anomaly_Prediction
# category: trainer
# twin: b013_anomaly_prediction_d_step_before_g_backward.py
import os
import time
import datetime
import argparse
import random
import functools
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.nn.functional


# ---- stand-in for tensorboardX (not installed here) ----
class SummaryWriter:
    def __init__(self, *args, **kwargs):
        pass

    def add_scalar(self, *args, **kwargs):
        pass

    def add_image(self, *args, **kwargs):
        pass


# ---- losses.py (on the CPU) ----
class Flow_Loss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gen_flows, gt_flows):
        return torch.mean(torch.abs(gen_flows - gt_flows))


class Intensity_Loss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, gen_frames, gt_frames):
        return torch.mean(torch.abs((gen_frames - gt_frames) ** 2))


class Gradient_Loss(nn.Module):
    def __init__(self, channels):
        super().__init__()

        pos = torch.from_numpy(np.identity(channels, dtype=np.float32))
        neg = -1 * pos
        # Note: when doing conv2d, the channel order is different from tensorflow, so do permutation.
        self.filter_x = torch.stack((neg, pos)).unsqueeze(0).permute(3, 2, 0, 1)
        self.filter_y = torch.stack((pos.unsqueeze(0), neg.unsqueeze(0))).permute(3, 2, 0, 1)

    def forward(self, gen_frames, gt_frames):
        # Do padding to match the  result of the original tensorflow implementation
        gen_frames_x = nn.functional.pad(gen_frames, [0, 1, 0, 0])
        gen_frames_y = nn.functional.pad(gen_frames, [0, 0, 0, 1])
        gt_frames_x = nn.functional.pad(gt_frames, [0, 1, 0, 0])
        gt_frames_y = nn.functional.pad(gt_frames, [0, 0, 0, 1])

        gen_dx = torch.abs(nn.functional.conv2d(gen_frames_x, self.filter_x))
        gen_dy = torch.abs(nn.functional.conv2d(gen_frames_y, self.filter_y))
        gt_dx = torch.abs(nn.functional.conv2d(gt_frames_x, self.filter_x))
        gt_dy = torch.abs(nn.functional.conv2d(gt_frames_y, self.filter_y))

        grad_diff_x = torch.abs(gt_dx - gen_dx)
        grad_diff_y = torch.abs(gt_dy - gen_dy)

        return torch.mean(grad_diff_x + grad_diff_y)


class Adversarial_Loss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, fake_outputs):
        # TODO: compare with torch.nn.MSELoss ?
        return torch.mean((fake_outputs - 1) ** 2 / 2)


class Discriminate_Loss(nn.Module):
    def __init__(self):
        super().__init__()

    def forward(self, real_outputs, fake_outputs):
        return torch.mean((real_outputs - 1) ** 2 / 2) + torch.mean(fake_outputs ** 2 / 2)


# ---- models/unet.py ----
class double_conv(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.conv = nn.Sequential(nn.Conv2d(in_ch, out_ch, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(out_ch),
                                  nn.ReLU(inplace=True),
                                  nn.Conv2d(out_ch, out_ch, 3, padding=1, bias=False),
                                  nn.BatchNorm2d(out_ch),
                                  nn.ReLU(inplace=True))

    def forward(self, x):
        x = self.conv(x)
        return x


class inconv(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.conv = double_conv(in_ch, out_ch)

    def forward(self, x):
        x = self.conv(x)
        return x


class down(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.mpconv = nn.Sequential(nn.MaxPool2d(2),
                                    double_conv(in_ch, out_ch))

    def forward(self, x):
        x = self.mpconv(x)
        return x


class up(nn.Module):
    def __init__(self, in_ch, out_ch):
        super().__init__()
        self.up = nn.ConvTranspose2d(in_ch, in_ch // 2, 2, stride=2)
        self.conv = double_conv(in_ch, out_ch)

    def forward(self, x1, x2):
        x1 = self.up(x1)

        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, (diffX // 2, diffX - diffX // 2, diffY // 2, diffY - diffY // 2))
        # for padding issues, see
        # https://github.com/HaiyongJiang/U-Net-Pytorch-Unstructured-Buggy/commit/0e854509c2cea854e247a9c615f175f76fbb2e3a
        # https://github.com/xiaopeng-liao/Pytorch-UNet/commit/8ebac70e633bac59fc22bb5195e513d5832fb3bd

        x = torch.cat([x2, x1], dim=1)
        x = self.conv(x)
        return x


class UNet(nn.Module):
    def __init__(self, input_channels, output_channel=3):
        super(UNet, self).__init__()
        self.inc = inconv(input_channels, 64)
        self.down1 = down(64, 128)
        self.down2 = down(128, 256)
        self.down3 = down(256, 512)
        self.up1 = up(512, 256)
        self.up2 = up(256, 128)
        self.up3 = up(128, 64)
        self.outc = nn.Conv2d(64, output_channel, kernel_size=3, padding=1)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x4 = self.down3(x3)
        x = self.up1(x4, x3)
        x = self.up2(x, x2)
        x = self.up3(x, x1)
        x = self.outc(x)

        return torch.tanh(x)


# ---- models/pix2pix_networks.py ----
class PixelDiscriminator(nn.Module):
    """Defines a 1x1 PatchGAN discriminator (pixelGAN)"""

    def __init__(self, input_nc, num_filters=(128, 256, 512, 512), use_norm=False, norm_layer=nn.BatchNorm2d):
        """Construct a 1x1 PatchGAN discriminator

        Parameters:
            input_nc (int)  -- the number of channels in input images
            num_filters (int)       -- the number of filters in the last conv layer
            norm_layer      -- normalization layer
        """

        # different from ano_pred with norm here
        super().__init__()
        if use_norm:
            if type(norm_layer) == functools.partial:  # no need to use bias as BatchNorm2d has affine parameters
                use_bias = norm_layer.func != nn.InstanceNorm2d
            else:
                use_bias = norm_layer != nn.InstanceNorm2d
        else:
            use_bias = True

        self.net = []
        self.net.append(nn.Conv2d(input_nc, num_filters[0], kernel_size=4, padding=2, stride=2, bias=use_bias))
        self.net.append(nn.LeakyReLU(0.2, True))
        if use_norm:
            for i in range(1, len(num_filters) - 1):
                self.net.extend([nn.Conv2d(num_filters[i - 1], num_filters[i], 4, 2, 2, bias=use_bias),
                                 nn.LeakyReLU(0.2, True),
                                 norm_layer(num_filters[i])])
        else:
            for i in range(1, len(num_filters) - 1):
                self.net.extend([nn.Conv2d(num_filters[i - 1], num_filters[i], 4, 2, 2, bias=use_bias),
                                 nn.LeakyReLU(0.2, True)])

        self.net.extend([nn.Conv2d(num_filters[-2], num_filters[-1], 4, 1, 2, bias=use_bias),
                         nn.LeakyReLU(0.2, True)])

        self.net.append(nn.Conv2d(num_filters[-1], 1, 4, 1, 2))
        self.net = nn.Sequential(*self.net)

    def forward(self, input):
        out = self.net(input)
        out = torch.sigmoid(out)
        return out


# ---- utils.py (the parts used) ----
def log10(t):
    """
    Calculates the base-10 tensorboard_log of each element in t.
    @param t: The tensor from which to calculate the base-10 tensorboard_log.
    @return: A tensor with the base-10 tensorboard_log of each element in t.
    """
    numerator = torch.log(t)
    denominator = torch.log(torch.FloatTensor([10.]))
    return numerator / denominator


def psnr_error(gen_frames, gt_frames):
    """
    Computes the Peak Signal to Noise Ratio error between the generated images and the ground
    truth images.
    @param gen_frames: A tensor of shape [batch_size, 3, height, width]. The frames generated by the
                       generator model.
    @param gt_frames: A tensor of shape [batch_size, 3, height, width]. The ground-truth frames for
                      each frame in gen_frames.
    @return: A scalar tensor. The mean Peak Signal to Noise Ratio error over each frame in the
             batch.
    """
    shape = list(gen_frames.shape)
    num_pixels = (shape[1] * shape[2] * shape[3])
    gt_frames = (gt_frames + 1.0) / 2.0  # if the generate ouuput is sigmoid output, modify here.
    gen_frames = (gen_frames + 1.0) / 2.0
    square_diff = (gt_frames - gen_frames) ** 2
    batch_errors = 10 * log10(1. / ((1. / num_pixels) * torch.sum(square_diff, [1, 2, 3])))
    return torch.mean(batch_errors)


def weights_init_normal(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        torch.nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm2d') != -1:
        torch.nn.init.normal_(m.weight.data, 1.0, 0.02)
        torch.nn.init.constant_(m.bias.data, 0.0)


# ---- models/liteFlownet/lite_flownet.py: a tiny stand-in network (no pretrained weights,
# no correlation CUDA kernel) with the repository's batch_estimate ----
class Network(nn.Module):
    def __init__(self):
        super().__init__()
        self.moduleFlow = nn.Sequential(nn.Conv2d(6, 8, 3, padding=1), nn.LeakyReLU(0.1, True),
                                        nn.Conv2d(8, 2, 3, padding=1))

    def forward(self, tensorFirst, tensorSecond):
        tensorFlow = self.moduleFlow(torch.cat([tensorFirst, tensorSecond], 1))
        return tensorFlow * 20.0

    @staticmethod
    def batch_estimate(tensor_batch, moduleNetwork):
        tensor_batch = (tensor_batch + 1) / 2  # normalize to 0 ~ 1.
        intWidth = tensor_batch.size(3)
        intHeight = tensor_batch.size(2)
        tensorFirst = tensor_batch[:, :3, ...]
        tensorSecond = tensor_batch[:, 3:, ...]

        intPreprocessedWidth = int(math.floor(math.ceil(intWidth / 32.0) * 32.0))
        intPreprocessedHeight = int(math.floor(math.ceil(intHeight / 32.0) * 32.0))

        tensorPreprocessedFirst = F.interpolate(input=tensorFirst,
                                                size=(intPreprocessedHeight, intPreprocessedWidth),
                                                mode='bilinear', align_corners=False)
        tensorPreprocessedSecond = F.interpolate(input=tensorSecond,
                                                 size=(intPreprocessedHeight, intPreprocessedWidth),
                                                 mode='bilinear', align_corners=False)

        tensorFlow = F.interpolate(input=moduleNetwork(tensorPreprocessedFirst, tensorPreprocessedSecond),
                                   size=(intHeight, intWidth), mode='bilinear', align_corners=False)

        tensorFlow[:, 0, :, :] *= float(intWidth) / float(intPreprocessedWidth)
        tensorFlow[:, 1, :, :] *= float(intHeight) / float(intPreprocessedHeight)

        return tensorFlow


class lite_flow:
    Network = Network


# ---- config.py: update_config (sizes shrunk) ----
class _Cfg:
    def __init__(self, args):
        self.__dict__.update(vars(args))
        self.g_lr = 0.0002
        self.d_lr = 0.00002
        self.resume = None
        self.img_size = (32, 32)

    def print_cfg(self):
        print(self.__dict__)


def update_config(args=None, mode=None):
    return _Cfg(args)


# ---- train.py (random clips instead of the avenue videos, a few iterations, no files) ----
parser = argparse.ArgumentParser(description='Anomaly Prediction')
parser.add_argument('--batch_size', default=2, type=int)
parser.add_argument('--dataset', default='avenue', type=str, help='The name of the dataset to train.')
parser.add_argument('--iters', default=2, type=int, help='The total iteration number.')
parser.add_argument('--resume', default=None, type=str,
                    help='The pre-trained model to resume training with, pass \'latest\' or the model name.')
parser.add_argument('--save_interval', default=1000, type=int, help='Save the model every [save_interval] iterations.')
parser.add_argument('--val_interval', default=1000, type=int,
                    help='Evaluate the model every [val_interval] iterations, pass -1 to disable.')
parser.add_argument('--show_flow', default=False, action='store_true',
                    help='If True, the first batch of ground truth optic flow could be visualized and saved.')
parser.add_argument('--flownet', default='lite', type=str, help='lite: LiteFlownet, 2sd: FlowNet2SD.')

args = parser.parse_args([])
train_cfg = update_config(args, mode='train')
train_cfg.print_cfg()

generator = UNet(input_channels=12, output_channel=3)
discriminator = PixelDiscriminator(input_nc=3)
optimizer_G = torch.optim.Adam(generator.parameters(), lr=train_cfg.g_lr)
optimizer_D = torch.optim.Adam(discriminator.parameters(), lr=train_cfg.d_lr)

generator.apply(weights_init_normal)
discriminator.apply(weights_init_normal)
print('Generator and discriminator are going to be trained from scratch.\n')

flow_net = lite_flow.Network()

flow_net.eval()  # Use flow_net to generate optic flows, so set to eval mode.

adversarial_loss = Adversarial_Loss()
discriminate_loss = Discriminate_Loss()
gradient_loss = Gradient_Loss(3)
flow_loss = Flow_Loss()
intensity_loss = Intensity_Loss()

train_dataloader = [(torch.arange(train_cfg.batch_size), torch.rand(train_cfg.batch_size, 15, 32, 32) * 2 - 1, None)
                    for _ in range(2)]

writer = SummaryWriter(f'tensorboard_log/{train_cfg.dataset}_bs{train_cfg.batch_size}')
start_iter = 0
training = True
generator = generator.train()
discriminator = discriminator.train()

step = start_iter
while training:
    for indice, clips, flow_strs in train_dataloader:
        input_frames = clips[:, 0:12, :, :]  # (n, 12, 256, 256)
        target_frame = clips[:, 12:15, :, :]  # (n, 3, 256, 256)
        input_last = input_frames[:, 9:12, :, :]  # use for flow_loss

        G_frame = generator(input_frames)

        if train_cfg.flownet == 'lite':
            gt_flow_input = torch.cat([input_last, target_frame], 1)
            pred_flow_input = torch.cat([input_last, G_frame], 1)
            # No need to train flow_net, use .detach() to cut off gradients.
            flow_gt = flow_net.batch_estimate(gt_flow_input, flow_net).detach()
            flow_pred = flow_net.batch_estimate(pred_flow_input, flow_net).detach()

        inte_l = intensity_loss(G_frame, target_frame)
        grad_l = gradient_loss(G_frame, target_frame)
        fl_l = flow_loss(flow_pred, flow_gt)
        g_l = adversarial_loss(discriminator(G_frame))
        G_l_t = 1. * inte_l + 1. * grad_l + 2. * fl_l + 0.05 * g_l

        # When training discriminator, don't train generator, so use .detach() to cut off gradients.
        D_l = discriminate_loss(discriminator(target_frame), discriminator(G_frame.detach()))

        # https://github.com/pytorch/pytorch/issues/39141
        # torch.optim optimizer now do inplace detection for module parameters since PyTorch 1.5
        # Or just do .step() after all the gradients have been computed, like the following way:
        optimizer_D.zero_grad()
        D_l.backward()
        optimizer_G.zero_grad()
        G_l_t.backward()
        optimizer_D.step()
        optimizer_G.step()

        time_end = time.time()
        if step > start_iter:  # This doesn't include the testing time during training.
            iter_t = time_end - temp
        temp = time_end

        if step != start_iter:
            psnr = psnr_error(G_frame, target_frame)
            lr_g = optimizer_G.param_groups[0]['lr']
            lr_d = optimizer_D.param_groups[0]['lr']

            print(f"[{step}]  inte_l: {inte_l:.3f} | grad_l: {grad_l:.3f} | fl_l: {fl_l:.3f} | "
                  f"g_l: {g_l:.3f} | G_l_total: {G_l_t:.3f} | D_l: {D_l:.3f} | psnr: {psnr:.3f} | "
                  f"iter: {iter_t:.3f}s | lr: {lr_g} {lr_d}")

            writer.add_scalar('psnr/train_psnr', psnr, global_step=step)
            writer.add_scalar('total_loss/g_loss_total', G_l_t, global_step=step)
            writer.add_scalar('total_loss/d_loss', D_l, global_step=step)

        step += 1
        if step > train_cfg.iters:
            training = False
            break
