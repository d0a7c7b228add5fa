"""BinaryNet.pytorch MNIST (main_mnist.py): BinarizeLinear keeps the real-valued weights in `self.weight.org` and, in every forward, replaces the Parameter's storage with their sign (`self.weight.data = Binarize(self.weight.org)`) and binarizes its input through `input.data = ...`; the training step backwards through the binary weights, copies the real weights back (`p.data.copy_(p.org)`) before optimizer.step(), then clips and saves them (`p.org.copy_(p.data.clamp_(-1,1))`)."""
# outcome: ok
# source: https://github.com/itayhubara/BinaryNet.pytorch/blob/d194d99/models/binarized_modules.py
# repo: itayhubara/BinaryNet.pytorch
# category: leaf
# binarized_modules.py as of the 2018 version that main_mnist.py was written against; torchvision is
# not installed, so random 28x28 images replace MNIST; the hidden width 2048*3 is shrunk to 64*3,
# two epochs of two batches, no test loop.
from __future__ import print_function
import argparse

import torch
import torch.nn as nn
import torch.optim as optim
from torch.autograd import Variable


# ---- models/binarized_modules.py ----
def Binarize(tensor,quant_mode='det'):
    if quant_mode=='det':
        return tensor.sign()
    else:
        return tensor.add_(1).div_(2).add_(torch.rand(tensor.size()).add(-0.5)).clamp_(0,1).round().mul_(2).add_(-1)


class BinarizeLinear(nn.Linear):

    def __init__(self, *kargs, **kwargs):
        super(BinarizeLinear, self).__init__(*kargs, **kwargs)

    def forward(self, input):

        if input.size(1) != 784:
            input.data=Binarize(input.data)
        if not hasattr(self.weight,'org'):
            self.weight.org=self.weight.data.clone()
        self.weight.data=Binarize(self.weight.org)
        out = nn.functional.linear(input, self.weight)
        if not self.bias is None:
            self.bias.org=self.bias.data.clone()
            out += self.bias.view(1, -1).expand_as(out)

        return out


# ---- main_mnist.py ----
parser = argparse.ArgumentParser(description='PyTorch MNIST Example')
parser.add_argument('--batch-size', type=int, default=64, metavar='N',
                    help='input batch size for training (default: 256)')
parser.add_argument('--epochs', type=int, default=100, metavar='N',
                    help='number of epochs to train (default: 10)')
parser.add_argument('--lr', type=float, default=0.01, metavar='LR',
                    help='learning rate (default: 0.001)')
parser.add_argument('--seed', type=int, default=1, metavar='S',
                    help='random seed (default: 1)')
parser.add_argument('--log-interval', type=int, default=10, metavar='N',
                    help='how many batches to wait before logging training status')
args = parser.parse_args(['--batch-size', '8', '--epochs', '2', '--log-interval', '1'])
args.cuda = False

torch.manual_seed(args.seed)

train_loader = torch.utils.data.DataLoader(
    torch.utils.data.TensorDataset(torch.randn(16, 1, 28, 28), torch.randint(0, 10, (16,))),
    batch_size=args.batch_size, shuffle=True)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.infl_ratio=3
        self.fc1 = BinarizeLinear(784, 64*self.infl_ratio)
        self.htanh1 = nn.Hardtanh()
        self.bn1 = nn.BatchNorm1d(64*self.infl_ratio)
        self.fc2 = BinarizeLinear(64*self.infl_ratio, 64*self.infl_ratio)
        self.htanh2 = nn.Hardtanh()
        self.bn2 = nn.BatchNorm1d(64*self.infl_ratio)
        self.fc3 = BinarizeLinear(64*self.infl_ratio, 64*self.infl_ratio)
        self.htanh3 = nn.Hardtanh()
        self.bn3 = nn.BatchNorm1d(64*self.infl_ratio)
        self.fc4 = nn.Linear(64*self.infl_ratio, 10)
        self.logsoftmax=nn.LogSoftmax()
        self.drop=nn.Dropout(0.5)

    def forward(self, x):
        x = x.view(-1, 28*28)
        x = self.fc1(x)
        x = self.bn1(x)
        x = self.htanh1(x)
        x = self.fc2(x)
        x = self.bn2(x)
        x = self.htanh2(x)
        x = self.fc3(x)
        x = self.drop(x)
        x = self.bn3(x)
        x = self.htanh3(x)
        x = self.fc4(x)
        return self.logsoftmax(x)

model = Net()


criterion = nn.CrossEntropyLoss()
optimizer = optim.Adam(model.parameters(), lr=args.lr)


def train(epoch):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        data, target = Variable(data), Variable(target)
        optimizer.zero_grad()
        output = model(data)
        loss = criterion(output, target)

        if epoch%40==0:
            optimizer.param_groups[0]['lr']=optimizer.param_groups[0]['lr']*0.1

        optimizer.zero_grad()
        loss.backward()
        for p in list(model.parameters()):
            if hasattr(p,'org'):
                p.data.copy_(p.org)
        optimizer.step()
        for p in list(model.parameters()):
            if hasattr(p,'org'):
                p.org.copy_(p.data.clamp_(-1,1))

        if batch_idx % args.log_interval == 0:
            print('Train Epoch: {} [{}/{} ({:.0f}%)]\tLoss: {:.6f}'.format(
                epoch, batch_idx * len(data), len(train_loader.dataset),
                100. * batch_idx / len(train_loader), loss.item()))


for epoch in range(1, args.epochs + 1):
    train(epoch)
