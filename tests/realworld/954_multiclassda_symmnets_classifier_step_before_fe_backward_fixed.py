"""MultiClassDA SymmNetsV2Solver.update_network, fixed as in the issue: optimizer_classifier.step() moved below loss_summary_feature_extractor.backward(), so both backwards see the classifier weights they used."""
# outcome: ok
# source: https://github.com/Gorilla-Lab-SCUT/MultiClassDA/issues/2
# repo: Gorilla-Lab-SCUT/MultiClassDA
# category: trainer
# twin: 953_multiclassda_symmnets_classifier_step_before_fe_backward.py
# The issue quotes this update order from the SymmNetsV2 solvers (SymmNetsV2SC_solver.py line 284);
# SymmNetsV2Solver from solver/SymmNetsV2_solver.py is kept below with ResNet-18 from
# models/resnet_SymmNet.py; cfg, the loaders and utils are shrunk to random tensors on CPU.
import math
import os
import tempfile
import time
from types import SimpleNamespace

import torch
import torch.nn as nn
import torch.nn.functional as F


# ---- config/config.py (the few fields used) ----
cfg = SimpleNamespace(
    DATASET=SimpleNamespace(NUM_CLASSES=3),
    MODEL=SimpleNamespace(FEATURE_EXTRACTOR='resnet18', PRETRAINED=False),
    TRAIN=SimpleNamespace(MAX_EPOCH=0, PROCESS_COUNTER='iteration', OPTIMIZER='SGD', BASE_LR=0.01,
                          MOMENTUM=0.9, WEIGHT_DECAY=0.0001, LR_SCHEDULE='inv', SAVING=False),
    INV=SimpleNamespace(ALPHA=10.0, BETA=0.75),
    SAVE_DIR=tempfile.mkdtemp(),
    RESUME='',
)


# ---- utils/utils.py ----
def to_cuda(x):
    if torch.cuda.is_available():
        x = x.cuda()
    return x


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


def accuracy(output, target):
    batch_size = target.size(0)
    _, pred = output.topk(1, 1, True, True)
    pred = pred.t()
    correct = pred.eq(target.view(1, -1).expand_as(pred))
    correct_k = correct[:1].view(-1).float().sum(0, keepdim=True)
    return correct_k.mul_(100.0 / batch_size)


def process_zero_values(x):
    return x + 1e-6 * (x == 0).float()


# ---- models/loss_utils.py ----
class _Loss(nn.Module):
    def __init__(self, size_average=True):
        super(_Loss, self).__init__()
        self.size_average = size_average


class _WeightedLoss(_Loss):
    def __init__(self, weight=None, size_average=True):
        super(_WeightedLoss, self).__init__(size_average)
        self.register_buffer('weight', weight)


class TargetDiscrimLoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=True, num_classes=31):
        super(TargetDiscrimLoss, self).__init__(weight, size_average)
        self.num_classes = num_classes

    def forward(self, input):
        batch_size = input.size(0)
        prob = F.softmax(input, dim=1)

        if (prob.data[:, self.num_classes:].sum(1) == 0).sum() != 0:  ########### in case of log(0)
            soft_weight = torch.FloatTensor(batch_size).fill_(0)
            soft_weight[prob[:, self.num_classes:].sum(1).data.cpu() == 0] = 1e-6
            soft_weight_var = to_cuda(soft_weight)
            loss = -((prob[:, self.num_classes:].sum(1) + soft_weight_var).log().mean())
        else:
            loss = -(prob[:, self.num_classes:].sum(1).log().mean())
        return loss


class ConcatenatedCELoss(_WeightedLoss):
    def __init__(self, weight=None, size_average=True, num_classes=31):
        super(ConcatenatedCELoss, self).__init__(weight, size_average)
        self.num_classes = num_classes

    def forward(self, input):
        prob = F.softmax(input, dim=1)
        prob_s = prob[:, :self.num_classes]
        prob_t = prob[:, self.num_classes:]

        prob_s = process_zero_values(prob_s)
        prob_t = process_zero_values(prob_t)
        loss = - (prob_s.log().mul(prob_t)).sum(1).mean() - (prob_t.log().mul(prob_s)).sum(1).mean()
        loss = loss * 0.5
        return loss


# ---- models/resnet_SymmNet.py ----
def conv3x3(in_planes, out_planes, stride=1):
    "3x3 convolution with padding"
    return nn.Conv2d(in_planes, out_planes, kernel_size=3, stride=stride,
                     padding=1, bias=False)


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, inplanes, planes, stride=1, downsample=None):
        super(BasicBlock, self).__init__()
        self.conv1 = conv3x3(inplanes, planes, stride)
        self.bn1 = nn.BatchNorm2d(planes)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = conv3x3(planes, planes)
        self.bn2 = nn.BatchNorm2d(planes)
        self.downsample = downsample
        self.stride = stride

    def forward(self, x):
        residual = x

        out = self.conv1(x)
        out = self.bn1(out)
        out = self.relu(out)

        out = self.conv2(out)
        out = self.bn2(out)

        if self.downsample is not None:
            residual = self.downsample(x)

        out += residual
        out = self.relu(out)

        return out


class ResNet(nn.Module):

    def __init__(self, block, layers, num_classes=1000):
        self.inplanes = 64
        super(ResNet, self).__init__()
        self.conv1 = nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3,
                               bias=False)
        self.bn1 = nn.BatchNorm2d(64)
        self.relu = nn.ReLU(inplace=True)
        self.maxpool = nn.MaxPool2d(kernel_size=3, stride=2, padding=1)
        self.layer1 = self._make_layer(block, 64, layers[0])
        self.layer2 = self._make_layer(block, 128, layers[1], stride=2)
        self.layer3 = self._make_layer(block, 256, layers[2], stride=2)
        self.layer4 = self._make_layer(block, 512, layers[3], stride=2)
        self.avgpool = nn.AvgPool2d(7)

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                n = m.kernel_size[0] * m.kernel_size[1] * m.out_channels
                m.weight.data.normal_(0, math.sqrt(2. / n))
            elif isinstance(m, nn.BatchNorm2d):
                m.weight.data.fill_(1)
                m.bias.data.zero_()

    def _make_layer(self, block, planes, blocks, stride=1):
        downsample = None
        if stride != 1 or self.inplanes != planes * block.expansion:
            downsample = nn.Sequential(
                nn.Conv2d(self.inplanes, planes * block.expansion,
                          kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(planes * block.expansion),
            )

        layers = []
        layers.append(block(self.inplanes, planes, stride, downsample))
        self.inplanes = planes * block.expansion
        for i in range(1, blocks):
            layers.append(block(self.inplanes, planes))

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
        x = x.view(x.size(0), -1)

        return x


def resnet18():
    """Constructs a ResNet-18 model.
    """
    model = ResNet(BasicBlock, [2, 2, 2, 2], num_classes=cfg.DATASET.NUM_CLASSES)
    classifier = nn.Linear(512 * BasicBlock.expansion, cfg.DATASET.NUM_CLASSES*2)
    return model, classifier


# ---- solver/base_solver.py ----
class BaseSolver:
    def __init__(self, net, dataloaders, **kwargs):
        self.opt = cfg
        self.net = net
        self.dataloaders = dataloaders
        self.CELoss = nn.CrossEntropyLoss()
        if torch.cuda.is_available():
            self.CELoss.cuda()
        self.epoch = 0
        self.iters = 0
        self.best_prec1 = 0
        self.iters_per_epoch = None
        self.build_optimizer()
        self.init_data(self.dataloaders)

    def init_data(self, dataloaders):
        self.train_data = {key: dict() for key in dataloaders if key != 'test'}
        for key in self.train_data.keys():
            if key not in dataloaders:
                continue
            cur_dataloader = dataloaders[key]
            self.train_data[key]['loader'] = cur_dataloader
            self.train_data[key]['iterator'] = None

        if 'test' in dataloaders:
            self.test_data = dict()
            self.test_data['loader'] = dataloaders['test']

    def build_optimizer(self):
        print('Optimizer built')

    def complete_training(self):
        if self.epoch > self.opt.TRAIN.MAX_EPOCH:
            return True

    def get_samples(self, data_name):
        data_loader = self.train_data[data_name]['loader']
        data_iterator = self.train_data[data_name]['iterator']
        try:
            sample = next(data_iterator)
        except StopIteration:
            data_iterator = iter(data_loader)
            sample = next(data_iterator)
            self.train_data[data_name]['iterator'] = data_iterator
        return sample


# ---- solver/SymmNetsV2_solver.py ----
class SymmNetsV2Solver(BaseSolver):
    def __init__(self, net, dataloaders, **kwargs):
        super(SymmNetsV2Solver, self).__init__(net, dataloaders, **kwargs)
        self.num_classes = cfg.DATASET.NUM_CLASSES
        self.TargetDiscrimLoss = to_cuda(TargetDiscrimLoss(num_classes=self.num_classes))
        self.ConcatenatedCELoss = to_cuda(ConcatenatedCELoss(num_classes=self.num_classes))
        self.feature_extractor = self.net['feature_extractor']
        self.classifier = self.net['classifier']

    def update_network(self, **kwargs):
        stop = False
        self.train_data['source']['iterator'] = iter(self.train_data['source']['loader'])
        self.train_data['target']['iterator'] = iter(self.train_data['target']['loader'])
        self.iters_per_epoch = len(self.train_data['target']['loader'])
        iters_counter_within_epoch = 0
        data_time = AverageMeter()
        batch_time = AverageMeter()
        classifier_loss = AverageMeter()
        feature_extractor_loss = AverageMeter()
        prec1_fs = AverageMeter()
        prec1_ft = AverageMeter()
        self.feature_extractor.train()
        self.classifier.train()
        end = time.time()
        while not stop:
            if self.opt.TRAIN.PROCESS_COUNTER == 'iteration':
                lam = 2 / (1 + math.exp(-1 * 10 * self.iters / ((self.opt.TRAIN.MAX_EPOCH + 1) * self.iters_per_epoch))) - 1
                print('value of lam is: %3f' % (lam))
                self.update_lr()
            source_data, source_gt = self.get_samples('source')
            target_data, _ = self.get_samples('target')
            source_data = to_cuda(source_data)
            source_gt = to_cuda(source_gt)
            target_data = to_cuda(target_data)
            data_time.update(time.time() - end)

            feature_source = self.feature_extractor(source_data)
            output_source = self.classifier(feature_source)
            feature_target = self.feature_extractor(target_data)
            output_target = self.classifier(feature_target)

            loss_task_fs = self.CELoss(output_source[:,:self.num_classes], source_gt)
            loss_task_ft = self.CELoss(output_source[:,self.num_classes:], source_gt)
            loss_discrim_source = self.CELoss(output_source, source_gt)
            loss_discrim_target = self.TargetDiscrimLoss(output_target)
            loss_summary_classifier = loss_task_fs + loss_task_ft + loss_discrim_source + loss_discrim_target

            source_gt_for_ft_in_fst = source_gt + self.num_classes
            loss_confusion_source = 0.5 * self.CELoss(output_source, source_gt) + 0.5 * self.CELoss(output_source, source_gt_for_ft_in_fst)
            loss_confusion_target = self.ConcatenatedCELoss(output_target)
            loss_summary_feature_extractor = loss_confusion_source + lam * loss_confusion_target

            self.optimizer_classifier.zero_grad()
            loss_summary_classifier.backward(retain_graph=True)

            self.optimizer_feature_extractor.zero_grad()
            loss_summary_feature_extractor.backward()
            self.optimizer_feature_extractor.step()
            self.optimizer_classifier.step()

            classifier_loss.update(loss_summary_classifier.item(), source_data.size()[0])
            feature_extractor_loss.update(loss_summary_feature_extractor.item(), source_data.size()[0])
            prec1_fs.update(accuracy(output_source[:, :self.num_classes], source_gt), source_data.size()[0])
            prec1_ft.update(accuracy(output_source[:, self.num_classes:], source_gt), source_data.size()[0])

            print("  Train:epoch: %d:[%d/%d], LossCla: %3f, LossFeat: %3f" % \
                  (self.epoch, iters_counter_within_epoch, self.iters_per_epoch, classifier_loss.avg, feature_extractor_loss.avg))

            batch_time.update(time.time() - end)
            end = time.time()
            self.iters += 1
            iters_counter_within_epoch += 1
            if iters_counter_within_epoch >= self.iters_per_epoch:
                log = open(os.path.join(self.opt.SAVE_DIR, 'log.txt'), 'a')
                log.write("\n")
                log.write("  Train:epoch: %d:[%d/%d], LossCla: %3f, LossFeat: %3f" % \
                  (self.epoch, iters_counter_within_epoch, self.iters_per_epoch, classifier_loss.avg, feature_extractor_loss.avg))
                log.close()
                stop = True

    def build_optimizer(self):
        if self.opt.TRAIN.OPTIMIZER == 'SGD':  ## some params may not contribute the loss_all, thus they are not updated in the training process.
            self.optimizer_feature_extractor = torch.optim.SGD([
                {'params': self.net['feature_extractor'].module.conv1.parameters(), 'name': 'pre-trained'},
                {'params': self.net['feature_extractor'].module.bn1.parameters(), 'name': 'pre-trained'},
                {'params': self.net['feature_extractor'].module.layer1.parameters(), 'name': 'pre-trained'},
                {'params': self.net['feature_extractor'].module.layer2.parameters(), 'name': 'pre-trained'},
                {'params': self.net['feature_extractor'].module.layer3.parameters(), 'name': 'pre-trained'},
                {'params': self.net['feature_extractor'].module.layer4.parameters(), 'name': 'pre-trained'},
            ],
                lr=self.opt.TRAIN.BASE_LR,
                momentum=self.opt.TRAIN.MOMENTUM,
                weight_decay=self.opt.TRAIN.WEIGHT_DECAY,
                nesterov=True)

            self.optimizer_classifier = torch.optim.SGD([
                {'params': self.net['classifier'].parameters(), 'name': 'new-added'},
            ],
                lr=self.opt.TRAIN.BASE_LR,
                momentum=self.opt.TRAIN.MOMENTUM,
                weight_decay=self.opt.TRAIN.WEIGHT_DECAY,
                nesterov=True)
        else:
            raise NotImplementedError
        print('Optimizer built')

    def update_lr(self):
        if self.opt.TRAIN.LR_SCHEDULE == 'inv':
            lr = self.opt.TRAIN.BASE_LR / pow((1 + self.opt.INV.ALPHA * self.iters / ((self.opt.TRAIN.MAX_EPOCH + 1) * self.iters_per_epoch)), self.opt.INV.BETA)
        else:
            lr = self.opt.TRAIN.BASE_LR
        lr_pretrain = lr * 0.1
        print('the lr is: %3f' % (lr))
        for param_group in self.optimizer_feature_extractor.param_groups:
            if param_group['name'] == 'pre-trained':
                param_group['lr'] = lr_pretrain
            elif param_group['name'] == 'new-added':
                param_group['lr'] = lr

        for param_group in self.optimizer_classifier.param_groups:
            if param_group['name'] == 'pre-trained':
                param_group['lr'] = lr_pretrain
            elif param_group['name'] == 'new-added':
                param_group['lr'] = lr


# ---- tools/train.py (random tensors instead of the image folders) ----
if __name__ == '__main__':
    torch.manual_seed(0)
    feature_extractor, classifier = resnet18()
    feature_extractor = to_cuda(torch.nn.DataParallel(feature_extractor))
    classifier = to_cuda(torch.nn.DataParallel(classifier))
    source = torch.utils.data.TensorDataset(torch.randn(4, 3, 224, 224), torch.randint(0, 3, (4,)))
    target = torch.utils.data.TensorDataset(torch.randn(4, 3, 224, 224), torch.randint(0, 3, (4,)))
    dataloaders = {
        'source': torch.utils.data.DataLoader(source, batch_size=2, shuffle=True, drop_last=True),
        'target': torch.utils.data.DataLoader(target, batch_size=2, shuffle=True, drop_last=True),
    }
    net = {'feature_extractor': feature_extractor, 'classifier': classifier}
    train_solver = SymmNetsV2Solver(net, dataloaders)
    train_solver.update_network()
    print('Training Done!')
