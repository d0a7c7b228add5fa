"""TSAN super-resolution, fixed as the issue says: CSB starts from `out = x.clone()` before writing its quadrants."""
# outcome: ok
# source: https://github.com/Jee-King/TSAN/issues/3
# repo: Jee-King/TSAN
# category: residual
# twin: 202_tsan_csb_writes_block_input.py
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- model/common.py (the parts tsan.py uses) ----
def default_conv(in_channels, out_channels, kernel_size, bias=True):
    return nn.Conv2d(
        in_channels, out_channels, kernel_size,
        padding=(kernel_size//2), bias=bias)


class MeanShift(nn.Conv2d):
    def __init__(self, rgb_range, rgb_mean, rgb_std, sign=-1):
        super(MeanShift, self).__init__(3, 3, kernel_size=1)
        std = torch.Tensor(rgb_std)
        self.weight.data = torch.eye(3).view(3, 3, 1, 1)
        self.weight.data.div_(std.view(3, 1, 1, 1))
        self.bias.data = sign * rgb_range * torch.Tensor(rgb_mean)
        self.bias.data.div_(std)
        self.requires_grad = False


class Upsampler(nn.Sequential):
    def __init__(self, conv, scale, n_feat, bn=False, act=False, bias=True):

        m = []
        if (scale & (scale - 1)) == 0:    # Is scale = 2^n?
            for _ in range(int(math.log(scale, 2))):
                m.append(conv(n_feat, 4 * n_feat, 3, bias))
                m.append(nn.PixelShuffle(2))
                if bn: m.append(nn.BatchNorm2d(n_feat))
                if act: m.append(act())
        elif scale == 3:
            m.append(conv(n_feat, 9 * n_feat, 3, bias))
            m.append(nn.PixelShuffle(3))
            if bn: m.append(nn.BatchNorm2d(n_feat))
            if act: m.append(act())
        else:
            raise NotImplementedError

        super(Upsampler, self).__init__(*m)


class common:
    default_conv = staticmethod(default_conv)
    MeanShift = MeanShift
    Upsampler = Upsampler


# ---- model/tsan.py ----
def make_model(args, parent=False):
    return TSAN(args)

class Conv_ReLU_Block(nn.Module):
    def __init__(self):
        super(Conv_ReLU_Block, self).__init__()
        self.conv = nn.Conv2d(in_channels=64, out_channels=64, kernel_size=3, stride=1, padding=1, bias=False)
        self.relu = nn.ReLU(inplace=True)

    def forward(self, x):
        return self.relu(self.conv(x))

class make_dense(nn.Module):
    def __init__(self, n_channels, n_feats=64, i=0):
        super(make_dense, self).__init__()
        kernel_size_1 = 3
        if i < 3:
            s = i+1
        else:
            s = i - 2*(i-3)
        #print(s)
        conv = common.default_conv
        self.conv_1_1 = nn.Conv2d(n_channels, n_feats, 1, padding=0, stride=1)
        self.conv_1_2 = nn.Conv2d(n_feats * 4, n_feats, 1, padding=0, stride=1)
        self.conv_3_1 = nn.Conv2d(n_feats, n_feats, kernel_size_1, padding=s, stride=1, dilation=s)
        self.dilated_conv_3_1 = nn.Conv2d(n_feats, n_feats, kernel_size_1, padding=s, stride=1, dilation=s)
        self.conv_3_2 = nn.Conv2d(n_feats, n_feats, kernel_size_1, padding=s, stride=1, dilation=s)
        self.dilated_conv_3_2 = nn.Conv2d(n_feats, n_feats, kernel_size_1, padding=s, stride=1, dilation=s)
        self.relu = nn.ReLU(inplace=True)

    def forward(self,x):
        out1x1 = self.relu(self.conv_1_1(x))
        input_1_1 = self.relu(self.conv_3_1(out1x1))
        input_1_2 = self.relu(self.dilated_conv_3_1(input_1_1))
        input_2_1 = self.relu(self.dilated_conv_3_2(out1x1))
        input_2_2 = self.relu(self.conv_3_2(input_2_1))
        output = torch.cat([input_1_1, input_1_2, input_2_1, input_2_2], 1)
        output = self.relu(self.conv_1_2(output))
        #output = output + out1x1
        output = torch.cat([output, x], 1)
        return output

class DRB(nn.Module):
    def __init__(self, n_channels, n_denselayer=6, n_feats=64):
        super(DRB, self).__init__()
        nChannels_ = n_channels
        modules = []
        for i in range(n_denselayer):
            modules.append(make_dense(nChannels_, n_feats, i))
            nChannels_ += n_feats
        self.dense_layers = nn.Sequential(*modules)
        self.conv_1x1 = nn.Conv2d(nChannels_, n_feats, kernel_size=1, padding=0, bias=False)
    def forward(self, x):
        out = self.dense_layers(x)
        out = self.conv_1x1(out)
        out = x + out
        return out

class CSB(nn.Module):
    def __init__(self, n_feats):
        super(CSB, self).__init__()
        self.conv1 = nn.Conv2d(n_feats*4, n_feats*4, kernel_size=1, padding=0, bias=False)

    def forward(self, x):
        # print(x.size(2)//2)
        f1 = x[:, : , 0:x.size(2)//2, 0:x.size(3)//2]
        f2 = x[:, : , x.size(2)//2:, 0:x.size(3)//2]
        f3 = x[:, : , 0:x.size(2)//2, x.size(3)//2:]
        f4 = x[:, : , x.size(2)//2:, x.size(3)//2:]
        # print(f1.size(), f2.size(), f3.size(), f4.size())
        f_all = torch.cat([f1,f2,f3,f4], 1)
        # print(f_all.size())
        f_all = self.conv1(f_all)
        out = x.clone()
        out[:,:,0:x.size(2)//2, 0:x.size(3)//2] = f_all[:,0:f_all.size(1)//4,:,:]
        out[:,:,x.size(2)//2:, 0:x.size(3)//2] = f_all[:,f_all.size(1)//4:f_all.size(1)//2,:,:]
        out[:,:,0:x.size(2)//2, x.size(3)//2:] = f_all[:,f_all.size(1)//2:f_all.size(1)*3//4,:,:]
        out[:,:,x.size(2)//2:, x.size(3)//2:] = f_all[:,f_all.size(1)*3//4:,:,:]
        return out

class First_Order(nn.Module):
    def __init__(self):
        super(First_Order, self).__init__()
        self.adaptive = nn.AdaptiveAvgPool2d((1,1))

    def forward(self, x):
        first_c = F.sigmoid(self.adaptive(x))
        first_c = first_c * x
        xh = x.permute(0,2,1,3)
        first_h = F.sigmoid(self.adaptive(xh))
        first_h = (first_h * xh).permute(0,2,1,3)
        xw = x.permute(0,3,2,1)
        first_w = F.sigmoid(self.adaptive(xw))
        first_w = (first_w * xw).permute(0,3,2,1)

        return first_c + first_h + first_w + x

class Second_Order(nn.Module):
    def __init__(self):
        super(Second_Order, self).__init__()

    def forward(self, x):
        second_c = F.sigmoid(torch.mean(x, 1).unsqueeze(1))
        second_c = second_c * x
        xh = x.permute(0,2,1,3)
        second_h = F.sigmoid(torch.mean(xh, 1).unsqueeze(1))
        second_h = (second_h * xh).permute(0,2,1,3)
        xw = x.permute(0,3,2,1)
        second_w = F.sigmoid(torch.mean(xw, 1).unsqueeze(1))
        second_w = (second_w * xw).permute(0,3,2,1)

        return second_c + second_h + second_w + x

class MCAB(nn.Module):
    def __init__(self, n_channels, n_denselayer=6, n_feats=64):
        super(MCAB, self).__init__()
        self.drb = DRB(n_channels, n_denselayer, n_feats)
        self.csb = CSB(n_feats)
        self.first = First_Order()
        self.second = Second_Order()
        self.conv3 = nn.Conv2d(n_feats, n_feats, kernel_size=3, padding=1, bias=False)

    def forward(self, x):
        down_b = self.drb(x)
        top_b = self.csb(x)
        top_b = self.second(self.first(top_b))
        top_b = F.sigmoid(self.conv3(top_b))
        return down_b*top_b



class TSAN(nn.Module):
    def __init__(self,args):
        super(TSAN, self).__init__()
        conv=common.default_conv
        n_feats = args.n_feats
        scale = args.scale[0]
        n_colors = args.n_colors
        kernel_size_1 = 3
        n_channels = 64
        n_denselayer = args.n_denselayer
        rgb_mean = (0.4488, 0.4371, 0.4040)
        rgb_std = (1.0, 1.0, 1.0)
        self.sub_mean = common.MeanShift(args.rgb_range, rgb_mean, rgb_std)
        self.first_conv = nn.Conv2d(n_colors, n_feats, 1, padding=0, stride=1)

        modules_body1 = MCAB(n_channels, n_denselayer, n_feats)
        modules_body2 = MCAB(n_channels, n_denselayer, n_feats)
        modules_body3 = MCAB(n_channels, n_denselayer, n_feats)

        # define tail module
        modules_tail = [
            nn.Conv2d(n_feats * 3, n_feats, 1, padding=0, stride=1),
            conv(n_feats, n_feats, kernel_size_1)]
        modules_up = [
            common.Upsampler(conv, scale, n_feats, act=False)]
        self.output1 = conv(n_feats, n_colors, 1)
        self.output2 = conv(n_feats, n_colors, 1)
        self.add_mean = common.MeanShift(args.rgb_range, rgb_mean, rgb_std, 1)
        self.relu = nn.ReLU(inplace=True)
        self.body1 = modules_body1
        self.body2 = modules_body2
        self.body3 = modules_body3

        self.tail = nn.Sequential(*modules_tail)
        self.up = nn.Sequential(*modules_up)
        self.first2_conv = nn.Conv2d(n_colors, n_feats, 1, padding=0, stride=1)
        self.refine = self.make_layer(Conv_ReLU_Block,5)

    def make_layer(self, block, num_layer):
        layers = []
        for _ in range(num_layer):
            layers.append((block()))
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.sub_mean(x)
        first_out = self.relu(self.first_conv(x))
        out_dense1 = self.body1(first_out)
        out_dense2 = self.body2(out_dense1)
        out_dense3 = self.body3(out_dense2)
        dense = torch.cat([out_dense1, out_dense2, out_dense3], 1)

        out = self.tail(dense)
        out = out + first_out
        out = self.up(out)
        out = self.output1(out)
        out1 = self.add_mean(out)
        out2 = self.first2_conv(out)
        out2 = self.refine(out2)
        out2 = self.output2(out2)
        #print(out2.size(), out.size())
        out2 = out2 + out
        out2 = self.add_mean(out2)
        return out1, out2


# ---- model/__init__.py (trimmed) ----
class Model(nn.Module):
    def __init__(self, args):
        super(Model, self).__init__()
        print('Making model...')

        self.scale = args.scale
        self.idx_scale = 0
        self.n_GPUs = args.n_GPUs
        self.device = torch.device('cpu' if args.cpu else 'cuda')
        self.model = make_model(args).to(self.device)

    def forward(self, x, idx_scale):
        self.idx_scale = idx_scale
        target = self.get_model()
        if hasattr(target, 'set_scale'):
            target.set_scale(idx_scale)
        return self.model(x)

    def get_model(self):
        if self.n_GPUs == 1:
            return self.model
        else:
            return self.model.module


# ---- trainer.py (trimmed: no checkpoint logging, timers or scheduler) ----
class Trainer():
    def __init__(self, args, loader_train, my_model, my_loss):
        self.args = args
        self.scale = args.scale

        self.loader_train = loader_train
        self.model = my_model
        self.loss = my_loss
        self.optimizer = torch.optim.Adam(self.model.parameters(), lr=args.lr)

        self.error_last = 1e8

    def train(self):
        self.model.train()

        for batch, (lr, hr, _, idx_scale) in enumerate(self.loader_train):
            lr, hr = self.prepare(lr, hr)

            self.optimizer.zero_grad()
            sr1, sr2 = self.model(lr, idx_scale)
            loss1 = self.loss(sr1, hr)
            loss2 = self.loss(sr2, hr)

            loss = loss1 + loss2

            #loss = loss1 + loss2
            if loss.item() < self.args.skip_threshold * self.error_last:
                loss.backward()
                self.optimizer.step()
            else:
                print('Skip this batch {}! (Loss: {})'.format(
                    batch + 1, loss.item()
                ))

            if (batch + 1) % self.args.print_every == 0:
                print('[{}/{}]\t{:.4f}'.format(
                    (batch + 1) * self.args.batch_size,
                    len(self.loader_train),
                    loss.item()))

    def prepare(self, *args):
        device = torch.device('cpu' if self.args.cpu else 'cuda')
        def _prepare(tensor):
            if self.args.precision == 'half': tensor = tensor.half()
            return tensor.to(device)

        return [_prepare(a) for a in args]


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='TSAN')
    parser.add_argument('--n_feats', type=int, default=64)
    parser.add_argument('--n_denselayer', type=int, default=2)
    parser.add_argument('--scale', type=lambda s: [int(x) for x in s.split('+')], default=[2])
    parser.add_argument('--n_colors', type=int, default=3)
    parser.add_argument('--rgb_range', type=int, default=255)
    parser.add_argument('--lr', type=float, default=1e-4)
    parser.add_argument('--batch_size', type=int, default=1)
    parser.add_argument('--skip_threshold', type=float, default=1e8)
    parser.add_argument('--print_every', type=int, default=1)
    parser.add_argument('--n_GPUs', type=int, default=1)
    parser.add_argument('--cpu', action='store_true', default=True)
    parser.add_argument('--precision', type=str, default='single')
    args = parser.parse_args([])

    # random (lr, hr, filename, idx_scale) batches instead of the DIV2K loader
    loader_train = [
        (torch.rand(args.batch_size, 3, 8, 8) * 255, torch.rand(args.batch_size, 3, 16, 16) * 255, 'img', 0)
        for _ in range(2)
    ]
    model = Model(args)
    loss = nn.L1Loss()
    t = Trainer(args, loader_train, model, loss)
    t.train()
