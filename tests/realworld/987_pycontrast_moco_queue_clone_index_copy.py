"""PyContrast (HobbitLong) MoCo training: RGBMoCo.forward computes logits against `self.memory.clone().detach()`, then `_update_memory` writes the keys into the memory buffer with `index_copy_` (under no_grad) before the loss's backward; keys come from the momentum encoder under no_grad via ShuffleBN, and `momentum_update` does `p2.data.mul_(m).add_(1 - m, p1.detach().data)` after optimizer.step()."""
# outcome: ok
# source: https://github.com/HobbitLong/PyContrast/blob/master/pycontrast/learning/contrast_trainer.py
# repo: HobbitLong/PyContrast
# category: iteration
from __future__ import print_function

import argparse
import math
import sys
import time
from types import SimpleNamespace

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

try:
    from torch.hub import load_state_dict_from_url
except ImportError:
    from torch.utils.model_zoo import load_url as load_state_dict_from_url


# stand-ins for torch.distributed with one process and DistributedDataParallel
def _all_gather(tensor_list, tensor, group=None, async_op=False):
    tensor_list[0].copy_(tensor)


dist = SimpleNamespace(get_world_size=lambda group=None: 1, all_gather=_all_gather,
                       broadcast=lambda tensor, src: tensor)


class _DDP(nn.Module):
    def __init__(self, module):
        super().__init__()
        self.module = module

    def forward(self, *args, **kwargs):
        return self.module(*args, **kwargs)


model_urls = {}


# ---- networks/resnet.py ----
def conv3x3(in_planes, out_planes, stride=1, groups=1, dilation=1):
    """3x3 convolution with padding"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride,
                     padding=dilation, groups=groups, bias=False, dilation=dilation)


def conv1x1(in_planes, out_planes, stride=1):
    """1x1 convolution"""
    return nn.Conv2d(in_planes, out_planes, kernel_size=1, stride=stride, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1,
                 base_width=64, dilation=1, norm_layer=None):
        super(BasicBlock, self).__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        if groups != 1 or base_width != 64:
            raise ValueError('BasicBlock only supports groups=1 and base_width=64')
        if dilation > 1:
            raise NotImplementedError("Dilation > 1 not supported in BasicBlock")
        # Both self.conv1 and self.downsample layers downsample the input when stride != 1
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = norm_layer(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = norm_layer(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class Bottleneck(nn.Module):
    # Bottleneck in torchvision places the stride for downsampling at 3x3 convolution(self.conv2)
    # while original implementation places the stride at the first 1x1 convolution(self.conv1)
    # according to "Deep residual learning for image recognition"https://arxiv.org/abs/1512.03385.
    # This variant is also known as ResNet V1.5 and improves accuracy according to
    # https://ngc.nvidia.com/catalog/model-scripts/nvidia:resnet_50_v1_5_for_pytorch.

    expansion = 4

    def __init__(self, inplanes, planes, stride=1, downsample=None, groups=1,
                 base_width=64, dilation=1, norm_layer=None):
        super(Bottleneck, self).__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        width = int(planes * (base_width / 64.)) * groups
        # Both self.conv2 and self.downsample layers downsample the input when stride != 1
        self.conv1 = conv1x1(inplanes, width)
        self.bn1 = norm_layer(width)
        self.conv2 = conv3x3(width, width, stride, groups, dilation)
        self.bn2 = norm_layer(width)
        self.conv3 = conv1x1(width, planes * self.expansion)
        self.bn3 = norm_layer(planes * self.expansion)
        self.relu = nn.ReLU(inplace=True)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        identity = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)
        out = self.relu(out)

        out = self.conv3(out)
        out = self.bn3(out)

        if self.downsample is not None:
            identity = self.downsample(x)

        out += identity
        out = self.relu(out)

        return out


class ResNet(nn.Module):

    def __init__(self, block, layers, width=1, in_channel=3, zero_init_residual=False,
                 groups=1, width_per_group=64, replace_stride_with_dilation=None,
                 norm_layer=None):
        super(ResNet, self).__init__()
        if norm_layer is None:
            norm_layer = nn.BatchNorm2d
        self._norm_layer = norm_layer

        self.inplanes = max(int(64 * width), 64)
        self.base = int(64 * width)
        self.dilation = 1
        if replace_stride_with_dilation is None:
            # each element in the tuple indicates if we should replace
            # the 2x2 stride with a dilated convolution instead
            replace_stride_with_dilation = [False, False, False]
        if len(replace_stride_with_dilation) != 3:
            raise ValueError("replace_stride_with_dilation should be None "
                             "or a 3-element tuple, got {}".format(replace_stride_with_dilation))
        self.groups = groups
        self.base_width = width_per_group
        self.conv1 = nn.Conv2d(in_channel, self.inplanes, kernel_size=7, stride=2, padding=3,
                               bias=False)
        self.bn1 = norm_layer(self.inplanes)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, self.base, layers[0])
        self.layer2 = self._make_layer(block, self.base * 2, layers[1], stride=2,
                                       dilate=replace_stride_with_dilation[0])
        self.layer3 = self._make_layer(block, self.base * 4, layers[2], stride=2,
                                       dilate=replace_stride_with_dilation[1])
        self.layer4 = self._make_layer(block, self.base * 8, layers[3], stride=2,
                                       dilate=replace_stride_with_dilation[2])
        self.avgpool = nn.AdaptiveAvgPool2d((1, 1))

        # comment out fc layer for unsupervised learning, will have another head
        # self.fc = nn.Linear(512 * block.expansion, num_classes)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                nn.init.kaiming_normal_(m.weight, mode='fan_out', nonlinearity='relu')
            elif isinstance(m, (nn.BatchNorm2d, nn.GroupNorm)):
                nn.init.constant_(m.weight, 1)
                nn.init.constant_(m.bias, 0)

        # Zero-initialize the last BN in each residual branch,
        # so that the residual branch starts with zeros, and each residual block behaves like an identity.
        # This improves the model by 0.2~0.3% according to https://arxiv.org/abs/1706.02677
        if zero_init_residual:
            for m in self.modules():
                if isinstance(m, Bottleneck):
                    nn.init.constant_(m.bn3.weight, 0)
                elif isinstance(m, BasicBlock):
                    nn.init.constant_(m.bn2.weight, 0)

    def _make_layer(self, block, planes, blocks, stride=1, dilate=False):
        norm_layer = self._norm_layer
        downsample = None
        previous_dilation = self.dilation
        if dilate:
            self.dilation *= stride
            stride = 1
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                conv1x1(self.inplanes, planes * block.expansion, stride),
                norm_layer(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample, self.groups,
                            self.base_width, previous_dilation, norm_layer))
        self.inplanes = planes * block.expansion
        for _ in range(1, blocks):
            layers.append(block(self.inplanes, planes, groups=self.groups,
                                base_width=self.base_width, dilation=self.dilation,
                                norm_layer=norm_layer))

        return nn.Sequential(*layers)

    def forward(self, x):
        x = self.conv1(x)
        x = self.bn1(x)
        x = self.relu(x)
        x = self.maxpool(x)

        x = self.layer1(x)
        x = self.layer2(x)
        x = self.layer3(x)
        x = self.layer4(x)

        x = self.avgpool(x)
        x = torch.flatten(x, 1)

        return x


def _resnet(arch, block, layers, pretrained, progress, **kwargs):
    model = ResNet(block, layers, **kwargs)
    if pretrained:
        state_dict = load_state_dict_from_url(model_urls[arch],
                                              progress=progress)
        model.load_state_dict(state_dict)
    return model


def resnet50(pretrained=False, progress=True, **kwargs):
    r"""ResNet-50 model from
    `"Deep Residual Learning for Image Recognition" <https://arxiv.org/pdf/1512.03385.pdf>`_
    Args:
        pretrained (bool): If True, returns a model pre-trained on ImageNet
        progress (bool): If True, displays a progress bar of the download to stderr
    """
    return _resnet('resnet50', Bottleneck, [3, 4, 6, 3], pretrained, progress,
                   **kwargs)


model_dict = {
    'resnet50': resnet50,
}


# ---- networks/util.py ----
class Normalize(nn.Module):
    def __init__(self, p=2):
        super(Normalize, self).__init__()
        self.p = p

    def forward(self, x):
        return F.normalize(x, p=self.p, dim=1)

# ---- networks/build_backbone.py ----
class RGBSingleHead(nn.Module):
    """RGB model with a single linear/mlp projection head"""
    def __init__(self, name='resnet50', head='linear', feat_dim=128):
        super(RGBSingleHead, self).__init__()

        name, width = self._parse_width(name)
        dim_in = int(2048 * width)
        self.width = width

        self.encoder = model_dict[name](width=width)

        if head == 'linear':
            self.head = nn.Sequential(
                nn.Linear(dim_in, feat_dim),
                Normalize(2)
            )
        elif head == 'mlp':
            self.head = nn.Sequential(
                nn.Linear(dim_in, dim_in),
                nn.ReLU(inplace=True),
                nn.Linear(dim_in, feat_dim),
                Normalize(2)
            )
        else:
            raise NotImplementedError(
                'head not supported: {}'.format(head))

    @staticmethod
    def _parse_width(name):
        if name.endswith('x4'):
            return name[:-2], 4
        elif name.endswith('x2'):
            return name[:-2], 2
        else:
            return name, 1

    def forward(self, x, mode=0):
        # mode --
        # 0: normal encoder,
        # 1: momentum encoder,
        # 2: testing mode
        feat = self.encoder(x)
        if mode == 0 or mode == 1:
            feat = self.head(feat)
        return feat

# ---- memory/mem_moco.py ----
class BaseMoCo(nn.Module):
    """base class for MoCo-style memory cache"""
    def __init__(self, K=65536, T=0.07):
        super(BaseMoCo, self).__init__()
        self.K = K
        self.T = T
        self.index = 0

    def _update_pointer(self, bsz):
        self.index = (self.index + bsz) % self.K

    def _update_memory(self, k, queue):
        """
        Args:
          k: key feature
          queue: memory buffer
        """
        with torch.no_grad():
            num_neg = k.shape[0]
            out_ids = torch.arange(num_neg)  # .cuda()
            out_ids = torch.fmod(out_ids + self.index, self.K).long()
            queue.index_copy_(0, out_ids, k)

    def _compute_logit(self, q, k, queue):
        """
        Args:
          q: query/anchor feature
          k: key feature
          queue: memory buffer
        """
        # pos logit
        bsz = q.shape[0]
        pos = torch.bmm(q.view(bsz, 1, -1), k.view(bsz, -1, 1))
        pos = pos.view(bsz, 1)

        # neg logit
        neg = torch.mm(queue, q.transpose(1, 0))
        neg = neg.transpose(0, 1)

        out = torch.cat((pos, neg), dim=1)
        out = torch.div(out, self.T)
        out = out.squeeze().contiguous()

        return out


class RGBMoCo(BaseMoCo):
    """Single Modal (e.g., RGB) MoCo-style cache"""
    def __init__(self, n_dim, K=65536, T=0.07):
        super(RGBMoCo, self).__init__(K, T)
        # create memory queue
        self.register_buffer('memory', torch.randn(K, n_dim))
        self.memory = F.normalize(self.memory)

    def forward(self, q, k, q_jig=None, all_k=None):
        """
        Args:
          q: query on current node
          k: key on current node
          q_jig: jigsaw query
          all_k: gather of feats across nodes; otherwise use q
        """
        bsz = q.size(0)
        k = k.detach()

        # compute logit
        queue = self.memory.clone().detach()
        logits = self._compute_logit(q, k, queue)
        if q_jig is not None:
            logits_jig = self._compute_logit(q_jig, k, queue)

        # set label
        labels = torch.zeros(bsz, dtype=torch.long)  # .cuda()

        # update memory
        all_k = all_k if all_k is not None else k
        self._update_memory(all_k, self.memory)
        self._update_pointer(all_k.size(0))

        if q_jig is not None:
            return logits, logits_jig, labels
        else:
            return logits, labels


# ---- learning/util.py ----
class AverageMeter(object):
    """Computes and stores the average and current value"""
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


def accuracy(output, target, topk=(1,)):
    """Computes the accuracy over the k top predictions for the specified values of k"""
    with torch.no_grad():
        maxk = max(topk)
        batch_size = target.size(0)

        _, pred = output.topk(maxk, 1, True, True)
        pred = pred.t()
        correct = pred.eq(target.view(1, -1).expand_as(pred))

        res = []
        for k in topk:
            correct_k = correct[:k].view(-1).float().sum(0, keepdim=True)
            res.append(correct_k.mul_(100.0 / batch_size))
        return res


# ---- learning/base_trainer.py ----
class BaseTrainer(object):
    """class for BaseTrainer"""
    def __init__(self, args):
        self.args = args
        self.local_group = None
        self.logger = None

    def warmup_learning_rate(self, epoch, batch_id, total_batches, optimizer):
        args = self.args
        if args.warm and epoch <= args.warm_epochs:
            p = (batch_id + (epoch - 1) * total_batches) / \
                (args.warm_epochs * total_batches)
            lr = args.warmup_from + p * (args.warmup_to - args.warmup_from)

            for param_group in optimizer.param_groups:
                param_group['lr'] = lr


# ---- learning/contrast_trainer.py ----
class ContrastTrainer(BaseTrainer):
    """trainer for contrastive pretraining"""
    def __init__(self, args):
        super(ContrastTrainer, self).__init__(args)

    def train(self, epoch, train_loader, model, model_ema, contrast,
              criterion, optimizer):
        """one epoch training"""
        args = self.args
        model.train()

        time1 = time.time()
        if args.mem == 'moco':
            outs = self._train_moco(epoch, train_loader, model, model_ema,
                                    contrast, criterion, optimizer)
        else:
            outs = self._train_mem(epoch, train_loader, model,
                                   contrast, criterion, optimizer)
        time2 = time.time()
        print('epoch {}, total time {:.2f}'.format(epoch, time2 - time1))

        return outs

    @staticmethod
    def _global_gather(x):
        all_x = [torch.ones_like(x)
                 for _ in range(dist.get_world_size())]
        dist.all_gather(all_x, x, async_op=False)
        return torch.cat(all_x, dim=0)

    def _shuffle_bn(self, x, model_ema):
        """ Shuffle BN implementation

        Args:
          x: input image on each GPU/process
          model_ema: momentum encoder on each GPU/process
        """
        args = self.args
        local_gp = self.local_group
        bsz = x.size(0)

        # gather x locally for each node
        node_x = [torch.ones_like(x)
                  for _ in range(dist.get_world_size(local_gp))]
        dist.all_gather(node_x, x.contiguous(),
                        group=local_gp, async_op=False)
        node_x = torch.cat(node_x, dim=0)

        # shuffle bn
        shuffle_ids = torch.randperm(
            bsz * dist.get_world_size(local_gp))  # .cuda()
        reverse_ids = torch.argsort(shuffle_ids)
        dist.broadcast(shuffle_ids, 0)
        dist.broadcast(reverse_ids, 0)

        this_ids = shuffle_ids[args.local_rank*bsz:(args.local_rank+1)*bsz]
        with torch.no_grad():
            this_x = node_x[this_ids]
            if args.jigsaw:
                k = model_ema(this_x, x_jig=None, mode=1)
            else:
                k = model_ema(this_x, mode=1)

        # globally gather k
        all_k = self._global_gather(k)

        # unshuffle bn
        node_id = args.node_rank
        ngpus = args.ngpus_per_node
        node_k = all_k[node_id*ngpus*bsz:(node_id+1)*ngpus*bsz]
        this_ids = reverse_ids[args.local_rank*bsz:(args.local_rank+1)*bsz]
        k = node_k[this_ids]

        return k, all_k

    @staticmethod
    def _compute_loss_accuracy(logits, target, criterion):
        """
        Args:
          logits: a list of logits, each with a contrastive task
          target: contrastive learning target
          criterion: typically nn.CrossEntropyLoss
        """
        losses = [criterion(logit, target) for logit in logits]

        def acc(l, t):
            acc1 = accuracy(l, t)
            return acc1[0]

        accuracies = [acc(logit, target) for logit in logits]

        return losses, accuracies

    def _train_moco(self, epoch, train_loader, model, model_ema, contrast,
                    criterion, optimizer):
        """
        MoCo encoder style training. This needs two forward passes,
        one for normal encoder, and one for moco encoder
        """
        args = self.args
        model.train()
        model_ema.eval()

        def set_bn_train(m):
            classname = m.__class__.__name__
            if classname.find('BatchNorm') != -1:
                m.train()
        model_ema.apply(set_bn_train)

        batch_time = AverageMeter()
        data_time = AverageMeter()
        loss_meter = AverageMeter()
        acc_meter = AverageMeter()
        loss_jig_meter = AverageMeter()
        acc_jig_meter = AverageMeter()

        end = time.time()
        for idx, data in enumerate(train_loader):
            data_time.update(time.time() - end)

            inputs = data[0].float()  # .cuda(args.gpu, non_blocking=True)
            bsz = inputs.size(0)

            # warm-up learning rate
            self.warmup_learning_rate(
                epoch, idx, len(train_loader), optimizer)

            # split into two crops
            x1, x2 = torch.split(inputs, [3, 3], dim=1)

            # shuffle BN for momentum encoder
            k, all_k = self._shuffle_bn(x2, model_ema)

            # loss and metrics
            if args.jigsaw:
                inputs_jig = data[2].float()  # .cuda(args.gpu, non_blocking=True)
                bsz, m, c, h, w = inputs_jig.shape
                inputs_jig = inputs_jig.view(bsz * m, c, h, w)
                q, q_jig = model(x1, inputs_jig)
                if args.modal == 'CMC':
                    q1, q2 = torch.chunk(q, 2, dim=1)
                    q1_jig, q2_jig = torch.chunk(q_jig, 2, dim=1)
                    k1, k2 = torch.chunk(k, 2, dim=1)
                    all_k1, all_k2 = torch.chunk(all_k, 2, dim=1)
                    output = contrast(q1, k1, q2, k2, q2_jig, q1_jig,
                                      all_k1, all_k2)
                    losses, accuracies = self._compute_loss_accuracy(
                        logits=output[:-1], target=output[-1],
                        criterion=criterion)
                    loss = (1 - args.beta) * (losses[0] + losses[1]) + \
                        args.beta * (losses[2] + losses[3])
                    update_loss = 0.5 * (losses[0] + losses[1])
                    update_acc = 0.5 * (accuracies[0] + accuracies[1])
                    update_loss_jig = 0.5 * (losses[2] + losses[3])
                    update_acc_jig = 0.5 * (accuracies[2] + accuracies[3])
                else:
                    output = contrast(q, k, q_jig, all_k)
                    losses, accuracies = self._compute_loss_accuracy(
                        logits=output[:-1], target=output[-1],
                        criterion=criterion)
                    loss = (1 - args.beta) * losses[0] + \
                        args.beta * losses[1]
                    update_loss = losses[0]
                    update_acc = accuracies[0]
                    update_loss_jig = losses[1]
                    update_acc_jig = accuracies[1]
            else:
                q = model(x1)
                if args.modal == 'CMC':
                    q1, q2 = torch.chunk(q, 2, dim=1)
                    k1, k2 = torch.chunk(k, 2, dim=1)
                    all_k1, all_k2 = torch.chunk(all_k, 2, dim=1)
                    output = contrast(q1, k1, q2, k2,
                                      all_k1=all_k1,
                                      all_k2=all_k2)
                    losses, accuracies = self._compute_loss_accuracy(
                        logits=output[:-1], target=output[-1],
                        criterion=criterion)
                    loss = losses[0] + losses[1]
                    update_loss = 0.5 * (losses[0] + losses[1])
                    update_acc = 0.5 * (accuracies[0] + accuracies[1])
                    update_loss_jig = torch.tensor([0.0])
                    update_acc_jig = torch.tensor([0.0])
                else:
                    output = contrast(q, k, all_k=all_k)
                    losses, accuracies = self._compute_loss_accuracy(
                        logits=output[:-1], target=output[-1],
                        criterion=criterion)
                    loss = losses[0]
                    update_loss = losses[0]
                    update_acc = accuracies[0]
                    update_loss_jig = torch.tensor([0.0])
                    update_acc_jig = torch.tensor([0.0])

            # backward
            optimizer.zero_grad()
            if args.amp:
                with amp.scale_loss(loss, optimizer) as scaled_loss:
                    scaled_loss.backward()
            else:
                loss.backward()
            optimizer.step()

            # update meters
            loss_meter.update(update_loss.item(), bsz)
            loss_jig_meter.update(update_loss_jig.item(), bsz)
            acc_meter.update(update_acc[0], bsz)
            acc_jig_meter.update(update_acc_jig[0], bsz)

            # update momentum encoder
            self.momentum_update(model.module, model_ema, args.alpha)

            batch_time.update(time.time() - end)
            end = time.time()

            # print info
            if args.local_rank == 0:
                if (idx + 1) % args.print_freq == 0:
                    print('Train: [{0}][{1}/{2}]\t'
                          'BT {batch_time.val:.3f} ({batch_time.avg:.3f})\t'
                          'DT {data_time.val:.3f} ({data_time.avg:.3f})\t'
                          'l_I {loss.val:.3f} ({loss.avg:.3f})\t'
                          'a_I {acc.val:.3f} ({acc.avg:.3f})\t'
                          'l_J {loss_jig.val:.3f} ({loss_jig.avg:.3f})\t'
                          'a_J {acc_jig.val:.3f} ({acc_jig.avg:.3f})'.format(
                           epoch, idx + 1, len(train_loader), batch_time=batch_time,
                           data_time=data_time, loss=loss_meter, acc=acc_meter,
                           loss_jig=loss_jig_meter, acc_jig=acc_jig_meter))
                    sys.stdout.flush()

        return loss_meter.avg, acc_meter.avg, loss_jig_meter.avg, acc_jig_meter.avg

    @staticmethod
    def momentum_update(model, model_ema, m):
        """ model_ema = m * model_ema + (1 - m) model """
        for p1, p2 in zip(model.parameters(), model_ema.parameters()):
            p2.data.mul_(m).add_(1 - m, p1.detach().data)


# ---- main_contrast.py (shrunk: one process, random 2-crop batches, resnet50 on 32x32) ----
def main():
    args = argparse.Namespace(mem='moco', modal='RGB', jigsaw=False, arch='resnet50', head='mlp', feat_dim=16,
                              nce_k=16, nce_t=0.2, alpha=0.999, learning_rate=0.03, momentum=0.9,
                              weight_decay=1e-4, warm=True, warm_epochs=2, warmup_from=0.01, warmup_to=0.03,
                              amp=False, gpu=None, local_rank=0, node_rank=0, ngpus_per_node=1, rank=0,
                              print_freq=1, epochs=1, beta=0.5)
    torch.manual_seed(0)
    model = RGBSingleHead(args.arch, args.head, args.feat_dim)
    model_ema = RGBSingleHead(args.arch, args.head, args.feat_dim)
    contrast = RGBMoCo(args.feat_dim, args.nce_k, args.nce_t)
    criterion = nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.learning_rate,
                                momentum=args.momentum, weight_decay=args.weight_decay)

    trainer = ContrastTrainer(args)
    model = _DDP(model)
    trainer.momentum_update(model.module, model_ema, 0)

    # (two 3-channel crops concatenated on dim 1, index) as the repo's dataset yields them
    train_loader = [(torch.randn(4, 6, 32, 32), torch.arange(4)) for _ in range(3)]
    for epoch in range(1, args.epochs + 1):
        loss, acc, loss_jig, acc_jig = trainer.train(epoch, train_loader, model, model_ema,
                                                     contrast, criterion, optimizer)
        print(epoch, loss, acc)


if __name__ == '__main__':
    main()
