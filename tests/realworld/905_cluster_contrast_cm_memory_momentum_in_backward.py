"""Cluster-Contrast ReID: ClusterMemory keeps normalized cluster centroids in a `features` buffer; the custom autograd Function CM reads them in forward (inputs.mm(features.t())), its output is divided in place by the temperature, and backward first computes grad_inputs from the centroids, then momentum-updates them row by row (`ctx.features[y] = ...; ctx.features[y] /= norm`); the memory is rebuilt from fresh cluster centers every epoch."""
# outcome: ok
# source: https://github.com/alibaba/cluster-contrast-reid/blob/main/clustercontrast/models/cm.py
# repo: alibaba/cluster-contrast-reid
# category: iteration
import collections
import time
from abc import ABC

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn, autograd


# ---- clustercontrast/models/cm.py ----
class CM(autograd.Function):

    @staticmethod
    def forward(ctx, inputs, targets, features, momentum):
        ctx.features = features
        ctx.momentum = momentum
        ctx.save_for_backward(inputs, targets)
        outputs = inputs.mm(ctx.features.t())

        return outputs

    @staticmethod
    def backward(ctx, grad_outputs):
        inputs, targets = ctx.saved_tensors
        grad_inputs = None
        if ctx.needs_input_grad[0]:
            grad_inputs = grad_outputs.mm(ctx.features)

        # momentum update
        for x, y in zip(inputs, targets):
            ctx.features[y] = ctx.momentum * ctx.features[y] + (1. - ctx.momentum) * x
            ctx.features[y] /= ctx.features[y].norm()

        return grad_inputs, None, None, None


def cm(inputs, indexes, features, momentum=0.5):
    return CM.apply(inputs, indexes, features, torch.Tensor([momentum]).to(inputs.device))


class ClusterMemory(nn.Module, ABC):
    def __init__(self, num_features, num_samples, temp=0.05, momentum=0.2, use_hard=False):
        super(ClusterMemory, self).__init__()
        self.num_features = num_features
        self.num_samples = num_samples

        self.momentum = momentum
        self.temp = temp
        self.use_hard = use_hard

        self.register_buffer('features', torch.zeros(num_samples, num_features))

    def forward(self, inputs, targets):

        inputs = F.normalize(inputs, dim=1)  # .cuda() in the original
        outputs = cm(inputs, targets, self.features, self.momentum)

        outputs /= self.temp
        loss = F.cross_entropy(outputs, targets)
        return loss


# ---- clustercontrast/utils/meters.py ----
class AverageMeter(object):
    def __init__(self):
        self.reset()

    def reset(self):
        self.val = 0
        self.avg = 0
        self.sum = 0
        self.count = 0

    def update(self, val, n=1):
        self.val = val
        self.sum += val * n
        self.count += n
        self.avg = self.sum / self.count


# ---- clustercontrast/trainers.py ----
class ClusterContrastTrainer(object):
    def __init__(self, encoder, memory=None):
        super(ClusterContrastTrainer, self).__init__()
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
            inputs, labels, indexes = self._parse_data(inputs)

            # forward
            f_out = self._forward(inputs)
            # compute loss with the hybrid memory
            loss = self.memory(f_out, labels)

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
                      .format(epoch, i + 1, len(data_loader),
                              losses.val, losses.avg))

    def _parse_data(self, inputs):
        imgs, _, pids, _, indexes = inputs
        return imgs, pids, indexes  # .cuda() in the original

    def _forward(self, inputs):
        return self.encoder(inputs)


# ---- stand-ins: a tiny encoder instead of ResNet-50, random images, random pseudo labels ----
class TinyEncoder(nn.Module):
    def __init__(self, num_features=32):
        super().__init__()
        self.num_features = num_features
        self.body = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
                                  nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(8, num_features))

    def forward(self, x):
        return self.body(x)


class IterLoader:
    def __init__(self, images, labels, batch_size, length):
        self.images, self.labels, self.batch_size, self.length = images, labels, batch_size, length

    def __len__(self):
        return self.length

    def new_epoch(self):
        pass

    def next(self):
        idx = torch.randint(0, self.images.size(0), (self.batch_size,))
        return self.images[idx], None, self.labels[idx], None, idx


if __name__ == '__main__':
    torch.manual_seed(0)
    np.random.seed(0)
    model = TinyEncoder()
    optimizer = torch.optim.Adam(model.parameters(), lr=3.5e-4, weight_decay=5e-4)
    trainer = ClusterContrastTrainer(model)
    images = torch.randn(24, 3, 16, 8)

    for epoch in range(2):
        with torch.no_grad():
            model.eval()
            features = F.normalize(model(images), dim=1)
        # DBSCAN on the Jaccard distance in the original; random pseudo labels here
        pseudo_labels = np.random.randint(0, 4, size=24)
        num_cluster = len(set(pseudo_labels)) - (1 if -1 in pseudo_labels else 0)

        # generate new dataset and calculate cluster centers
        @torch.no_grad()
        def generate_cluster_features(labels, features):
            centers = collections.defaultdict(list)
            for i, label in enumerate(labels):
                if label == -1:
                    continue
                centers[labels[i]].append(features[i])

            centers = [
                torch.stack(centers[idx], dim=0).mean(0) for idx in sorted(centers.keys())
            ]

            centers = torch.stack(centers, dim=0)
            return centers

        cluster_features = generate_cluster_features(pseudo_labels, features)

        # Create hybrid memory
        memory = ClusterMemory(model.num_features, num_cluster, temp=0.05,
                               momentum=0.2, use_hard=False)
        memory.features = F.normalize(cluster_features, dim=1)
        trainer.memory = memory

        train_loader = IterLoader(images, torch.as_tensor(pseudo_labels), batch_size=8, length=3)
        train_loader.new_epoch()
        trainer.train(epoch, train_loader, optimizer, print_freq=1, train_iters=len(train_loader))
