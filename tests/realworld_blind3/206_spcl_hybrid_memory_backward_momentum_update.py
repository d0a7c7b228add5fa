"""SpCL's hybrid memory: a custom autograd Function scores the batch against a memory bank of instance features kept as a buffer, and its backward writes a momentum update of the bank rows in place; the trainer runs the memory loss, loss.backward() and optimizer.step() every iteration, the pseudo labels reassigned each epoch."""
# outcome: ok
# source: https://github.com/yxgeee/SpCL/blob/master/spcl/models/hm.py
# repo: yxgeee/SpCL
# category: iteration
# spcl/models/hm.py and SpCLTrainer_USL from spcl/trainers.py, on CPU (.cuda() calls dropped);
# the ResNet-50 encoder and the re-ID loaders are small stand-ins, the clustering a random labelling.
import time

import numpy as np

import torch
import torch.nn.functional as F
from torch.nn import init
from torch import nn, autograd


# ---- spcl/models/hm.py ----
class HM(autograd.Function):

    @staticmethod
    def forward(ctx, inputs, indexes, features, momentum):
        ctx.features = features
        ctx.momentum = momentum
        ctx.save_for_backward(inputs, indexes)
        outputs = inputs.mm(ctx.features.t())

        return outputs

    @staticmethod
    def backward(ctx, grad_outputs):
        inputs, indexes = ctx.saved_tensors
        grad_inputs = None
        if ctx.needs_input_grad[0]:
            grad_inputs = grad_outputs.mm(ctx.features)

        # momentum update
        for x, y in zip(inputs, indexes):
            ctx.features[y] = ctx.momentum * ctx.features[y] + (1. - ctx.momentum) * x
            ctx.features[y] /= ctx.features[y].norm()

        return grad_inputs, None, None, None


def hm(inputs, indexes, features, momentum=0.5):
    return HM.apply(inputs, indexes, features, torch.Tensor([momentum]).to(inputs.device))


class HybridMemory(nn.Module):
    def __init__(self, num_features, num_samples, temp=0.05, momentum=0.2):
        super(HybridMemory, self).__init__()
        self.num_features = num_features
        self.num_samples = num_samples

        self.momentum = momentum
        self.temp = temp

        self.register_buffer('features', torch.zeros(num_samples, num_features))
        self.register_buffer('labels', torch.zeros(num_samples).long())

    def forward(self, inputs, indexes):
        # inputs: B*2048, features: L*2048
        inputs = hm(inputs, indexes, self.features, self.momentum)
        inputs /= self.temp
        B = inputs.size(0)

        def masked_softmax(vec, mask, dim=1, epsilon=1e-6):
            exps = torch.exp(vec)
            masked_exps = exps * mask.float().clone()
            masked_sums = masked_exps.sum(dim, keepdim=True) + epsilon
            return (masked_exps/masked_sums)

        targets = self.labels[indexes].clone()
        labels = self.labels.clone()

        sim = torch.zeros(labels.max()+1, B).float()
        sim.index_add_(0, labels, inputs.t().contiguous())
        nums = torch.zeros(labels.max()+1, 1).float()
        nums.index_add_(0, labels, torch.ones(self.num_samples,1).float())
        mask = (nums>0).float()
        sim /= (mask*nums+(1-mask)).clone().expand_as(sim)
        mask = mask.expand_as(sim)
        masked_sim = masked_softmax(sim.t().contiguous(), mask.t().contiguous())
        return F.nll_loss(torch.log(masked_sim+1e-6), targets)


# ---- spcl/utils/meters.py ----
class AverageMeter(object):
    """Computes and stores the average and current value"""

    def __init__(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


# ---- spcl/trainers.py ----
class SpCLTrainer_USL(object):
    def __init__(self, encoder, memory):
        super(SpCLTrainer_USL, self).__init__()
        self.encoder = encoder
        self.memory = memory

    def train(self, epoch, data_loader, optimizer, print_freq=10, train_iters=400):
        self.encoder.train()

        batch_time = AverageMeter()
        data_time = AverageMeter()

        losses = AverageMeter()

        end = time.time()
        for i in range(train_iters):
            # load data
            inputs = data_loader.next()
            data_time.update(time.time() - end)

            # process inputs
            inputs, _, indexes = self._parse_data(inputs)

            # forward
            f_out = self._forward(inputs)

            # compute loss with the hybrid memory
            loss = self.memory(f_out, indexes)

            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

            losses.update(loss.item())

            # print log
            batch_time.update(time.time() - end)
            end = time.time()

            if (i + 1) % print_freq == 0:
                print('Epoch: [{}][{}/{}]\t'
                      'Loss {:.3f} ({:.3f})'
                      .format(epoch, i + 1, train_iters,
                              losses.val, losses.avg))

    def _parse_data(self, inputs):
        imgs, _, pids, _, indexes = inputs
        return imgs, pids, indexes

    def _forward(self, inputs):
        return self.encoder(inputs)


# ---- stand-ins: encoder (models.create('resnet50', norm=True)) and the IterLoader ----
class Encoder(nn.Module):
    def __init__(self, num_features=16):
        super(Encoder, self).__init__()
        self.num_features = num_features
        self.base = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.AdaptiveAvgPool2d(1))
        self.feat = nn.Linear(8, num_features)

    def forward(self, x):
        x = self.base(x).flatten(1)
        return F.normalize(self.feat(x))


class IterLoader:
    def __init__(self, num_samples, batch_size):
        self.num_samples, self.batch_size = num_samples, batch_size

    def next(self):
        indexes = torch.randperm(self.num_samples)[:self.batch_size]
        imgs = torch.randn(self.batch_size, 3, 16, 8)
        return imgs, None, torch.zeros(self.batch_size).long(), None, indexes


# ---- examples/spcl_train_usl.py (main loop, shrunk) ----
if __name__ == '__main__':
    torch.manual_seed(0)
    num_samples = 24
    model = Encoder()

    # Create hybrid memory
    memory = HybridMemory(model.num_features, num_samples, temp=0.05, momentum=0.2)

    # Initialize target-domain instance features
    with torch.no_grad():
        features = model(torch.randn(num_samples, 3, 16, 8))
    memory.features = F.normalize(features, dim=1)

    params = [{"params": [value]} for _, value in model.named_parameters() if value.requires_grad]
    optimizer = torch.optim.Adam(params, lr=3.5e-4, weight_decay=5e-4)

    trainer = SpCLTrainer_USL(model, memory)

    for epoch in range(2):
        # self-paced clustering replaced by a random labelling (some clusters, some outliers)
        pseudo_labels = torch.randint(0, 6, (num_samples,))
        memory.labels = pseudo_labels

        train_loader = IterLoader(num_samples, batch_size=8)
        trainer.train(epoch, train_loader, optimizer, print_freq=1, train_iters=2)
