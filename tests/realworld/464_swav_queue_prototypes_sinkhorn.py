"""SwAV training: prototypes renormalized with `weight.copy_(w)` under no_grad each step, a feature queue shifted and refilled by slice writes (`queue[i, bs:] = queue[i, :-bs].clone()`) and Sinkhorn's in-place divisions, all under no_grad before the swapped-prediction loss's backward."""
# outcome: ok
# source: https://github.com/facebookresearch/swav/blob/main/main_swav.py
# repo: facebookresearch/swav
# category: iteration
import argparse
import math
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- torch.distributed with a world of one process ----
class dist:
    @staticmethod
    def all_reduce(tensor):
        return tensor


# ---- src/utils.py ----
class AverageMeter(object):
    """computes and stores the average and current value"""

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


# ---- src/resnet50.py (the head; a small conv trunk stands in for the ResNet-50 body) ----
class ResNet(nn.Module):
    def __init__(self, normalize=False, output_dim=0, hidden_mlp=0, nmb_prototypes=0, eval_mode=False):
        super(ResNet, self).__init__()
        self.eval_mode = eval_mode
        self.padding = nn.ConstantPad2d(1, 0.0)
        self.conv1 = nn.Conv2d(3, 16, kernel_size=3, stride=2, padding=2, bias=False)
        self.bn1 = nn.BatchNorm2d(16)
        self.relu = nn.ReLU(inplace=True)
        self.layer1 = nn.Sequential(nn.Conv2d(16, 32, 3, padding=1, bias=False), nn.BatchNorm2d(32), nn.ReLU(inplace=True))
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))
        num_out_filters = 32

        # normalize output features
        self.l2norm = normalize

        # projection head
        if output_dim == 0:
            self.projection_head = None
        elif hidden_mlp == 0:
            self.projection_head = nn.Linear(num_out_filters, output_dim)
        else:
            self.projection_head = nn.Sequential(
                nn.Linear(num_out_filters, hidden_mlp),
                nn.BatchNorm1d(hidden_mlp),
                nn.ReLU(inplace=True),
                nn.Linear(hidden_mlp, output_dim),
            )

        # prototype layer
        self.prototypes = None
        if nmb_prototypes > 0:
            self.prototypes = nn.Linear(output_dim, nmb_prototypes, bias=False)

    def forward_backbone(self, x):
        x = self.padding(x)

        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.layer1(x)

        if self.eval_mode:
            return x

        x = self.avgpool(x)
        x = torch.flatten(x, 1)

        return x

    def forward_head(self, x):
        if self.projection_head is not None:
            x = self.projection_head(x)

        if self.l2norm:
            x = nn.functional.normalize(x, dim=1, p=2)

        if self.prototypes is not None:
            return x, self.prototypes(x)
        return x

    def forward(self, inputs):
        if not isinstance(inputs, list):
            inputs = [inputs]
        idx_crops = torch.cumsum(torch.unique_consecutive(
            torch.tensor([inp.shape[-1] for inp in inputs]),
            return_counts=True,
        )[1], 0)
        start_idx = 0
        for end_idx in idx_crops:
            _out = self.forward_backbone(torch.cat(inputs[start_idx: end_idx]))
            if start_idx == 0:
                output = _out
            else:
                output = torch.cat((output, _out))
            start_idx = end_idx
        return self.forward_head(output)


class DistributedDataParallel(nn.Module):
    """one process: just the `.module` the training loop reaches through"""
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *inputs):
        return self.module(*inputs)


# ---- main_swav.py ----
parser = argparse.ArgumentParser(description="Implementation of SwAV")
parser.add_argument("--nmb_crops", type=int, default=[2, 2], nargs="+")
parser.add_argument("--crops_for_assign", type=int, nargs="+", default=[0, 1])
parser.add_argument("--temperature", default=0.1, type=float)
parser.add_argument("--epsilon", default=0.05, type=float)
parser.add_argument("--sinkhorn_iterations", default=3, type=int)
parser.add_argument("--feat_dim", default=16, type=int)
parser.add_argument("--nmb_prototypes", default=10, type=int)
parser.add_argument("--queue_length", type=int, default=12)
parser.add_argument("--epoch_queue_starts", type=int, default=1)
parser.add_argument("--epochs", default=3, type=int)
parser.add_argument("--batch_size", default=4, type=int)
parser.add_argument("--base_lr", default=0.6, type=float)
parser.add_argument("--final_lr", type=float, default=0.0006)
parser.add_argument("--freeze_prototypes_niters", default=2, type=int)
parser.add_argument("--wd", default=1e-6, type=float)
parser.add_argument("--hidden_mlp", default=32, type=int)
parser.add_argument("--use_fp16", type=bool, default=False)
parser.add_argument("--world_size", default=1, type=int)
parser.add_argument("--rank", default=0, type=int)
args = parser.parse_args([])


def train(train_loader, model, optimizer, epoch, lr_schedule, queue):
    batch_time = AverageMeter()
    data_time = AverageMeter()
    losses = AverageMeter()

    model.train()
    use_the_queue = False

    end = time.time()
    for it, inputs in enumerate(train_loader):
        # measure data loading time
        data_time.update(time.time() - end)

        # update learning rate
        iteration = epoch * len(train_loader) + it
        for param_group in optimizer.param_groups:
            param_group["lr"] = lr_schedule[iteration]

        # normalize the prototypes
        with torch.no_grad():
            w = model.module.prototypes.weight.data.clone()
            w = nn.functional.normalize(w, dim=1, p=2)
            model.module.prototypes.weight.copy_(w)

        # ============ multi-res forward passes ... ============
        embedding, output = model(inputs)
        embedding = embedding.detach()
        bs = inputs[0].size(0)

        # ============ swav loss ... ============
        loss = 0
        for i, crop_id in enumerate(args.crops_for_assign):
            with torch.no_grad():
                out = output[bs * crop_id: bs * (crop_id + 1)].detach()

                # time to use the queue
                if queue is not None:
                    if use_the_queue or not torch.all(queue[i, -1, :] == 0):
                        use_the_queue = True
                        out = torch.cat((torch.mm(
                            queue[i],
                            model.module.prototypes.weight.t()
                        ), out))
                    # fill the queue
                    queue[i, bs:] = queue[i, :-bs].clone()
                    queue[i, :bs] = embedding[crop_id * bs: (crop_id + 1) * bs]

                # get assignments
                q = distributed_sinkhorn(out)[-bs:]

            # cluster assignment prediction
            subloss = 0
            for v in np.delete(np.arange(np.sum(args.nmb_crops)), crop_id):
                x = output[bs * v: bs * (v + 1)] / args.temperature
                subloss -= torch.mean(torch.sum(q * F.log_softmax(x, dim=1), dim=1))
            loss += subloss / (np.sum(args.nmb_crops) - 1)
        loss /= len(args.crops_for_assign)

        # ============ backward and optim step ... ============
        optimizer.zero_grad()
        loss.backward()
        # cancel gradients for the prototypes
        if iteration < args.freeze_prototypes_niters:
            for name, p in model.named_parameters():
                if "prototypes" in name:
                    p.grad = None
        optimizer.step()

        # ============ misc ... ============
        losses.update(loss.item(), inputs[0].size(0))
        batch_time.update(time.time() - end)
        end = time.time()
        if args.rank ==0 and it % 2 == 0:
            print("Epoch: [{0}][{1}]\tLoss {loss.val:.4f} ({loss.avg:.4f})".format(epoch, it, loss=losses))
    return (epoch, losses.avg), queue


@torch.no_grad()
def distributed_sinkhorn(out):
    Q = torch.exp(out / args.epsilon).t() # Q is K-by-B for consistency with notations from our paper
    B = Q.shape[1] * args.world_size # number of samples to assign
    K = Q.shape[0] # how many prototypes

    # make the matrix sums to 1
    sum_Q = torch.sum(Q)
    dist.all_reduce(sum_Q)
    Q /= sum_Q

    for it in range(args.sinkhorn_iterations):
        # normalize each row: total weight per prototype must be 1/K
        sum_of_rows = torch.sum(Q, dim=1, keepdim=True)
        dist.all_reduce(sum_of_rows)
        Q /= sum_of_rows
        Q /= K

        # normalize each column: total weight per sample must be 1/B
        Q /= torch.sum(Q, dim=0, keepdim=True)
        Q /= B

    Q *= B # the colomns must sum to 1 so that Q is an assignment
    return Q.t()


def main():
    # random multi-crop batches (two 24px and two 12px crops) stand in for the ImageNet loader
    train_loader = [[torch.randn(args.batch_size, 3, 24, 24), torch.randn(args.batch_size, 3, 24, 24),
                     torch.randn(args.batch_size, 3, 12, 12), torch.randn(args.batch_size, 3, 12, 12)]
                    for _ in range(3)]

    # build model
    model = ResNet(
        normalize=True,
        hidden_mlp=args.hidden_mlp,
        output_dim=args.feat_dim,
        nmb_prototypes=args.nmb_prototypes,
    )
    model = DistributedDataParallel(model)

    # build optimizer (LARC left out)
    optimizer = torch.optim.SGD(
        model.parameters(),
        lr=args.base_lr,
        momentum=0.9,
        weight_decay=args.wd,
    )
    warmup_lr_schedule = np.linspace(0, args.base_lr, len(train_loader) * 1)
    iters = np.arange(len(train_loader) * (args.epochs - 1))
    cosine_lr_schedule = np.array([args.final_lr + 0.5 * (args.base_lr - args.final_lr) * (1 + \
                         math.cos(math.pi * t / (len(train_loader) * (args.epochs - 1)))) for t in iters])
    lr_schedule = np.concatenate((warmup_lr_schedule, cosine_lr_schedule))

    # build the queue
    queue = None
    # the queue needs to be divisible by the batch size
    args.queue_length -= args.queue_length % (args.batch_size * args.world_size)

    for epoch in range(0, args.epochs):

        # optionally starts a queue
        if args.queue_length > 0 and epoch >= args.epoch_queue_starts and queue is None:
            queue = torch.zeros(
                len(args.crops_for_assign),
                args.queue_length // args.world_size,
                args.feat_dim,
            )

        # train the network
        scores, queue = train(train_loader, model, optimizer, epoch, lr_schedule, queue)
        print(scores)


if __name__ == "__main__":
    main()
