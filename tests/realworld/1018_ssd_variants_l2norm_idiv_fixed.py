"""SSD-variants' SSD300 with L2Norm as the thread fixed it (the amdegroot/ssd.pytorch version): `norm = x.pow(2).sum(dim=1, keepdim=True).sqrt()+1e-10; x = torch.div(x,norm)` out of place, so the in-place-ReLU conv4_3 output stays intact."""
# outcome: ok
# source: https://github.com/uoip/SSD-variants/issues/4
# repo: uoip/SSD-variants
# category: residual
# twin: 1017_ssd_variants_l2norm_idiv.py
# "SSD: Single Shot MultiBox Detector" Wei Liu et al. ECCV16

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.autograd import Variable

import numpy as np
import os
import itertools
from collections import OrderedDict


# ---- models/vgg.py (channel widths shrunk 16x: 64 -> 4, ..., 1024 -> 64) ----
class VGG16(nn.Module):
    '''
    input image: BGR format, range [0, 255], then subtract mean
    '''
    def __init__(self):
        super(VGG16, self).__init__()

        self.conv1_1 = nn.Conv2d(  3,  4, 3, padding=1)
        self.conv1_2 = nn.Conv2d( 4,  4, 3, padding=1)
        self.pool1 = nn.MaxPool2d(2, ceil_mode=True)

        self.conv2_1 = nn.Conv2d( 4, 8, 3, padding=1)
        self.conv2_2 = nn.Conv2d(8, 8, 3, padding=1)
        self.pool2 = nn.MaxPool2d(2, ceil_mode=True)

        self.conv3_1 = nn.Conv2d(8, 16, 3, padding=1)
        self.conv3_2 = nn.Conv2d(16, 16, 3, padding=1)
        self.conv3_3 = nn.Conv2d(16, 16, 3, padding=1)
        self.pool3 = nn.MaxPool2d(2, ceil_mode=True)

        self.conv4_1 = nn.Conv2d(16, 32, 3, padding=1)
        self.conv4_2 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv4_3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool4 = nn.MaxPool2d(2, ceil_mode=True)

        self.conv5_1 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv5_2 = nn.Conv2d(32, 32, 3, padding=1)
        self.conv5_3 = nn.Conv2d(32, 32, 3, padding=1)
        self.pool5 = nn.MaxPool2d(3, stride=1, padding=1)

        self.conv6 = nn.Conv2d(32, 64, 3, padding=6, dilation=6)
        self.conv7 = nn.Conv2d(64, 64, 1)


# ---- models/SSD.py ----
class L2Norm(nn.Module):
    def __init__(self,n_channels, scale=20):
        super(L2Norm,self).__init__()
        self.weight = nn.Parameter(torch.Tensor(n_channels))
        nn.init.constant(self.weight, scale)

    def forward(self, x):
        norm = x.pow(2).sum(dim=1, keepdim=True).sqrt()+1e-10
        x = torch.div(x,norm)
        out = self.weight.unsqueeze(0).unsqueeze(2).unsqueeze(3).expand_as(x) * x
        return out



class SSD300(nn.Module):

    config = {
        'name': 'SSD300-VGG16',
        'image_size': 300,
        'grids': (38, 19, 10, 5, 3, 1),   # feature map size
        'aspect_ratios': ((1/2.,  1,  2),
                          (1/3.,  1/2.,  1,  2,  3),
                          (1/3.,  1/2.,  1,  2,  3),
                          (1/3.,  1/2.,  1,  2,  3),
                          (1/2.,  1,  2),
                          (1/2.,  1,  2)),
        'steps': [s / 300. for s in [8, 16, 32, 64, 100, 300]],
        'sizes': [s / 300. for s in [30, 60, 111, 162, 213, 264, 315]],
        'prior_variance': [0.1, 0.1, 0.2, 0.2],       # prior_variance imply relative weights of position offset,
    }                                                 # width/height and class confidence

    def __init__(self, n_classes):
        super(SSD300, self).__init__()
        self.n_classes = n_classes

        self.Base = VGG16()
        self.Extra = nn.Sequential(OrderedDict([
            ('extra1_1', nn.Conv2d(64, 16, 1)),
            ('extra1_2', nn.Conv2d(16, 32, 3, padding=1, stride=2)),
            ('extra2_1', nn.Conv2d(32, 8, 1)),
            ('extra2_2', nn.Conv2d(8, 16, 3, padding=1, stride=2)),
            ('extra3_1', nn.Conv2d(16, 8, 1)),
            ('extra3_2', nn.Conv2d(8, 16, 3)),
            ('extra4_1', nn.Conv2d(16, 8, 1)),
            ('extra4_2', nn.Conv2d(8, 16, 3)),
        ]))
        self.pred_layers = ['conv4_3', 'conv7', 'extra1_2', 'extra2_2', 'extra3_2', 'extra4_2']
        n_channels = [32, 64, 32, 16, 16, 16]

        self.L2Norm = nn.ModuleList([L2Norm(32, 20)])
        self.norm_layers = ['conv4_3']   # decrease prediction layers' influence on backbone

        self.Loc = nn.ModuleList([])
        self.Conf = nn.ModuleList([])
        for i, ar in enumerate(self.config['aspect_ratios']):
            n = len(ar) + 1
            self.Loc.append(nn.Conv2d(n_channels[i], n * 4, 3, padding=1))
            self.Conf.append(nn.Conv2d(n_channels[i], n * (self.n_classes + 1), 3, padding=1))

    def forward(self, x):
        xs = []
        for name, m in itertools.chain(self.Base._modules.items(),
                                       self.Extra._modules.items()):
            if isinstance(m, nn.Conv2d):
                x = F.relu(m(x), inplace=True)
            else:
                x = m(x)

            if name in self.pred_layers:
                if name in self.norm_layers:
                    i = self.norm_layers.index(name)
                    xs.append(self.L2Norm[i](x))
                else:
                    xs.append(x)

        return self._prediction(xs)

    def _prediction(self, xs):
        locs = []
        confs = []
        for i, x in enumerate(xs):
            loc = self.Loc[i](x)
            loc = loc.permute(0, 2, 3, 1).contiguous().view(loc.size(0), -1, 4)
            locs.append(loc)

            conf = self.Conf[i](x)
            conf = conf.permute(0, 2, 3, 1).contiguous().view(conf.size(0), -1, self.n_classes + 1)
            confs.append(conf)
        return torch.cat(locs, dim=1), torch.cat(confs, dim=1)


    def init_parameters(self, backbone=None):
        def weights_init(m):
            if isinstance(m, nn.Conv2d):
                nn.init.xavier_uniform(m.weight.data)
                m.bias.data.zero_()
        self.apply(weights_init)

        if backbone is not None and os.path.isfile(backbone):
            self.Base.load_pretrained(backbone)
            print('Backbone loaded!')
        else:
            print('No backbone file!')


if __name__ == "__main__":
    # a few training steps on random 300x300 images; random box offsets and labels stand in
    # for the matched priors (the repo's MultiBoxLoss: smooth L1 on locations + cross entropy)
    torch.manual_seed(0)
    model = SSD300(n_classes=3)
    model.init_parameters()
    optimizer = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9, weight_decay=5e-4)
    for step in range(2):
        images = torch.randn(2, 3, 300, 300)
        locs, confs = model(images)
        loc_targets = torch.randn_like(locs)
        conf_targets = torch.randint(0, 4, confs.shape[:2])
        loss = F.smooth_l1_loss(locs, loc_targets) + F.cross_entropy(confs.reshape(-1, 4), conf_targets.reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        print(step, loss.item())
