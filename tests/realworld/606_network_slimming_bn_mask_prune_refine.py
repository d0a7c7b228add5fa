"""network-slimming (mask implementation): sparsity training adds an L1 subgradient through `m.weight.grad.data.add_(...)`, prune_mask zeroes the small BatchNorm scales with `m.weight.data.mul_(mask)` / `m.bias.data.mul_(mask)`, and the refine run keeps them zero with BN_grad_zero; the VGG's BatchNorm2d is followed by nn.ReLU(inplace=True)."""
# outcome: ok
# source: https://github.com/Eric-mingjie/network-slimming/blob/master/mask-impl/main_mask.py
# repo: Eric-mingjie/network-slimming
# category: leaf
from __future__ import print_function
import argparse
import math
import os
import shutil
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.autograd import Variable


# ---- models/vgg.py ----
defaultcfg = {
    11 : [64, 'M', 128, 'M', 256, 256, 'M', 512, 512, 'M', 512, 512],
    # channels divided by 8 to run on a CPU in seconds
    'tiny' : [8, 'M', 16, 'M', 32, 32, 'M', 32, 32, 'M', 32, 32],
}

class vgg(nn.Module):
    def __init__(self, dataset='cifar10', depth=19, init_weights=True, cfg=None):
        super(vgg, self).__init__()
        if cfg is None:
            cfg = defaultcfg[depth]

        self.feature = self.make_layers(cfg, True)

        if dataset == 'cifar10':
            num_classes = 10
        elif dataset == 'cifar100':
            num_classes = 100
        self.classifier = nn.Linear(cfg[-1], num_classes)
        if init_weights:
            self._initialize_weights()

    def make_layers(self, cfg, batch_norm=False):
        layers = []
        in_channels = 3
        for v in cfg:
            if v == 'M':
                layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
            else:
                conv2d = nn.Conv2d(in_channels, v, kernel_size=3, padding=1, bias=False)
                if batch_norm:
                    layers += [conv2d, nn.BatchNorm2d(v), nn.ReLU(inplace=True)]
                else:
                    layers += [conv2d, nn.ReLU(inplace=True)]
                in_channels = v
        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.feature(x)
        x = nn.AvgPool2d(2)(x)
        x = x.view(x.size(0), -1)
        y = self.classifier(x)
        return y

    def _initialize_weights(self):
        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.data.normal_(0, math.sqrt(2. / n))
                if m.bias is not None:
                    m.bias.data.zero_()
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.data.fill_(0.5)
                m.bias.data.zero_()
            elif isinstance(m, nn.Linear):
                m.weight.data.normal_(0, 0.01)
                m.bias.data.zero_()


# ---- training settings (main_mask.py) ----
parser = argparse.ArgumentParser(description='PyTorch Slimming CIFAR training')
parser.add_argument('--dataset', type=str, default='cifar10')
parser.add_argument('--sparsity-regularization', '-sr', dest='sr', action='store_true', default=True)
parser.add_argument('--s', type=float, default=0.0001)
parser.add_argument('--batch-size', type=int, default=8)
parser.add_argument('--test-batch-size', type=int, default=8)
parser.add_argument('--epochs', type=int, default=1)
parser.add_argument('--start-epoch', default=0, type=int)
parser.add_argument('--lr', type=float, default=0.1)
parser.add_argument('--momentum', type=float, default=0.9)
parser.add_argument('--weight-decay', '--wd', default=1e-4, type=float)
parser.add_argument('--seed', type=int, default=1)
parser.add_argument('--log-interval', type=int, default=1)
parser.add_argument('--save', default=tempfile.mkdtemp(), type=str)
parser.add_argument('--percent', type=float, default=0.5)
parser.add_argument('--arch', default='vgg', type=str)
parser.add_argument('--depth', default='tiny', type=str)
args = parser.parse_args([])
args.cuda = False

torch.manual_seed(args.seed)

# random 32x32 batches instead of CIFAR-10
train_loader = [(torch.randn(args.batch_size, 3, 32, 32), torch.randint(0, 10, (args.batch_size,))) for _ in range(2)]
test_loader = [(torch.randn(args.test_batch_size, 3, 32, 32), torch.randint(0, 10, (args.test_batch_size,)))]

model = vgg(dataset=args.dataset, depth=args.depth)
optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)


# additional subgradient descent on the sparsity-induced penalty term
def updateBN():
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            m.weight.grad.data.add_(args.s*torch.sign(m.weight.data))  # L1

def BN_grad_zero():
    for m in model.modules():
        if isinstance(m, nn.BatchNorm2d):
            mask = (m.weight.data != 0)
            mask = mask.float()
            m.weight.grad.data.mul_(mask)
            m.bias.grad.data.mul_(mask)

def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = Variable(data), Variable(target)
        optimizer.zero_grad()
        output = model(data)
        loss = F.cross_entropy(output, target)
        pred = output.data.max(1, keepdim=True)[1]
        loss.backward()
        if args.sr:
            updateBN()
        BN_grad_zero()
        optimizer.step()
        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{}]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader), loss.item()))

def test():
    model.eval()
    test_loss = 0
    correct = 0
    with torch.no_grad():
        for data, target in test_loader:
            output = model(data)
            test_loss += F.cross_entropy(output, target, reduction='sum').item() # sum up batch loss
            pred = output.data.max(1, keepdim=True)[1] # get the index of the max log-probability
            correct += pred.eq(target.data.view_as(pred)).cpu().sum()
    return correct / float(len(test_loader) * args.test_batch_size)


# ---- sparsity training ----
for epoch in range(args.start_epoch, args.epochs):
    train(epoch)
    prec1 = test()

# ---- prune_mask.py: zero the smallest BatchNorm scales ----
total = 0
for m in model.modules():
    if isinstance(m, nn.BatchNorm2d):
        total += m.weight.data.shape[0]

bn = torch.zeros(total)
index = 0
for m in model.modules():
    if isinstance(m, nn.BatchNorm2d):
        size = m.weight.data.shape[0]
        bn[index:(index+size)] = m.weight.data.abs().clone()
        index += size

y, i = torch.sort(bn)
thre_index = int(total * args.percent)
thre = y[thre_index]

pruned = 0
cfg = []
cfg_mask = []
for k, m in enumerate(model.modules()):
    if isinstance(m, nn.BatchNorm2d):
        weight_copy = m.weight.data.abs().clone()
        mask = weight_copy.gt(thre).float()
        pruned = pruned + mask.shape[0] - torch.sum(mask)
        m.weight.data.mul_(mask)
        m.bias.data.mul_(mask)
        cfg.append(int(torch.sum(mask)))
        cfg_mask.append(mask.clone())
        print('layer index: {:d} \t total channel: {:d} \t remaining channel: {:d}'.
            format(k, mask.shape[0], int(torch.sum(mask))))
    elif isinstance(m, nn.MaxPool2d):
        cfg.append('M')

torch.save({'cfg': cfg, 'state_dict': model.state_dict()}, os.path.join(args.save, 'pruned.pth.tar'))
print('Pre-processing Successful!', test())

# ---- main_mask.py --refine pruned.pth.tar ----
model = vgg(dataset=args.dataset, depth=args.depth)
checkpoint = torch.load(os.path.join(args.save, 'pruned.pth.tar'))
model.load_state_dict(checkpoint['state_dict'])
optimizer = optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum, weight_decay=args.weight_decay)
args.sr = False
for epoch in range(args.start_epoch, args.epochs):
    train(epoch)
    prec1 = test()
print("Best accuracy: "+str(prec1))
