"""Mean Teacher (pytorch/main.py): the EMA model's parameters are cut off with `param.detach_()` at creation, it runs in train mode on its own inputs each batch, its logits re-wrapped as a no-grad Variable for the consistency loss, and after each optimizer step `ema_param.data.mul_(alpha).add_(1 - alpha, param.data)`."""
# outcome: ok
# source: https://github.com/CuriousAI/mean-teacher/blob/master/pytorch/main.py
# repo: CuriousAI/mean-teacher
# category: trainer
# Ported to run on current torch on a CPU: `loss.data[0]` read as `loss.item()`, `.cuda(async=True)`
# left out; a small convnet stands in for cifar_shakeshake26, random batches for CIFAR-10.
import time

import numpy as np
import torch
import torch.nn as nn
from torch.autograd import Variable
from torch.nn import functional as F

NO_LABEL = -1
global_step = 0


# ---- mean_teacher/ramps.py ----
def sigmoid_rampup(current, rampup_length):
    """Exponential rampup from https://arxiv.org/abs/1610.02242"""
    if rampup_length == 0:
        return 1.0
    else:
        current = np.clip(current, 0.0, rampup_length)
        phase = 1.0 - current / rampup_length
        return float(np.exp(-5.0 * phase * phase))


# ---- mean_teacher/losses.py ----
def softmax_mse_loss(input_logits, target_logits):
    """Takes softmax on both sides and returns MSE loss

    Note:
    - Returns the sum over all examples. Divide by the batch size afterwards
      if you want the mean.
    - Sends gradients to inputs but not the targets.
    """
    assert input_logits.size() == target_logits.size()
    input_softmax = F.softmax(input_logits, dim=1)
    target_softmax = F.softmax(target_logits, dim=1)
    num_classes = input_logits.size()[1]
    return F.mse_loss(input_softmax, target_softmax, size_average=False) / num_classes


# ---- a small convnet instead of architectures.cifar_shakeshake26 ----
class SmallCNN(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.LeakyReLU(0.1, inplace=True),
            nn.MaxPool2d(2), nn.Dropout(0.5),
            nn.Conv2d(16, 32, 3, padding=1), nn.BatchNorm2d(32), nn.LeakyReLU(0.1, inplace=True),
            nn.AdaptiveAvgPool2d(1))
        self.fc = nn.Linear(32, num_classes)

    def forward(self, x):
        return self.fc(self.features(x).view(x.size(0), -1))


class args:
    consistency, consistency_rampup, consistency_type = 100.0, 5, 'mse'
    logit_distance_cost, ema_decay, lr, print_freq = -1, 0.999, 0.05, 2


# ---- main.py ----
def create_model(ema=False):
    model = SmallCNN(num_classes=10)

    if ema:
        for param in model.parameters():
            param.detach_()

    return model


def get_current_consistency_weight(epoch):
    # Consistency ramp-up from https://arxiv.org/abs/1610.02242
    return args.consistency * sigmoid_rampup(epoch, args.consistency_rampup)


def update_ema_variables(model, ema_model, alpha, global_step):
    # Use the true average until the exponential average is more correct
    alpha = min(1 - 1 / (global_step + 1), alpha)
    for ema_param, param in zip(ema_model.parameters(), model.parameters()):
        ema_param.data.mul_(alpha).add_(1 - alpha, param.data)


def train(train_loader, model, ema_model, optimizer, epoch):
    global global_step

    class_criterion = nn.CrossEntropyLoss(size_average=False, ignore_index=NO_LABEL)
    consistency_criterion = softmax_mse_loss

    # switch to train mode
    model.train()
    ema_model.train()

    end = time.time()
    for i, ((input, ema_input), target) in enumerate(train_loader):
        input_var = torch.autograd.Variable(input)
        ema_input_var = torch.autograd.Variable(ema_input)
        target_var = torch.autograd.Variable(target)

        minibatch_size = len(target_var)
        labeled_minibatch_size = target_var.data.ne(NO_LABEL).sum()
        assert labeled_minibatch_size > 0

        ema_model_out = ema_model(ema_input_var)
        model_out = model(input_var)

        if isinstance(model_out, Variable):
            assert args.logit_distance_cost < 0
            logit1 = model_out
            ema_logit = ema_model_out

        ema_logit = Variable(ema_logit.detach().data, requires_grad=False)

        class_logit, cons_logit = logit1, logit1
        res_loss = 0

        class_loss = class_criterion(class_logit, target_var) / minibatch_size

        ema_class_loss = class_criterion(ema_logit, target_var) / minibatch_size

        if args.consistency:
            consistency_weight = get_current_consistency_weight(epoch)
            consistency_loss = consistency_weight * consistency_criterion(cons_logit, ema_logit) / minibatch_size
        else:
            consistency_loss = 0

        loss = class_loss + consistency_loss + res_loss
        assert not (np.isnan(loss.item()) or loss.item() > 1e5), 'Loss explosion: {}'.format(loss.item())

        # compute gradient and do SGD step
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        global_step += 1
        update_ema_variables(model, ema_model, args.ema_decay, global_step)

        if i % args.print_freq == 0:
            print('Epoch: [{0}][{1}/{2}]\tClass {3:.4f}\tEMA class {4:.4f}'.format(
                epoch, i, len(train_loader), class_loss.item(), ema_class_loss.item()))


if __name__ == '__main__':
    model = create_model()
    ema_model = create_model(ema=True)
    optimizer = torch.optim.SGD(model.parameters(), args.lr, momentum=0.9, weight_decay=2e-4, nesterov=True)

    def batch(bs=8):
        target = torch.randint(0, 10, (bs,))
        target[bs // 2:] = NO_LABEL  # the unlabeled half
        return (torch.randn(bs, 3, 16, 16), torch.randn(bs, 3, 16, 16)), target

    train_loader = [batch() for _ in range(4)]
    for epoch in range(2):
        train(train_loader, model, ema_model, optimizer, epoch)
