"""Chexpert train_epoch with SAM, fixed: `loss` is reset to 0 before the second forward pass sums its task losses, so the second backward sees only the second graph."""
# outcome: ok
# source: https://github.com/davda54/sam/issues/10
# repo: davda54/sam
# category: retention
# twin: 108_chexpert_sam_loss_not_reset.py
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


# stand-in for easydict (not installed here)
class edict(dict):
    def __getattr__(self, name):
        return self[name]


# ---- sam.py ----
class SAM(torch.optim.Optimizer):
    def __init__(self, params, base_optimizer, rho=0.05, **kwargs):
        assert rho >= 0.0, f"Invalid rho, should be non-negative: {rho}"

        defaults = dict(rho=rho, **kwargs)
        super(SAM, self).__init__(params, defaults)

        self.base_optimizer = base_optimizer(self.param_groups, **kwargs)
        self.param_groups = self.base_optimizer.param_groups

    @torch.no_grad()
    def first_step(self, zero_grad=False):
        grad_norm = self._grad_norm()
        for group in self.param_groups:
            scale = group["rho"] / (grad_norm + 1e-12)

            for p in group["params"]:
                if p.grad is None: continue
                e_w = p.grad * scale.to(p)
                p.add_(e_w)  # climb to the local maximum "w + e(w)"
                self.state[p]["e_w"] = e_w

        if zero_grad: self.zero_grad()

    @torch.no_grad()
    def second_step(self, zero_grad=False):
        for group in self.param_groups:
            for p in group["params"]:
                if p.grad is None: continue
                p.sub_(self.state[p]["e_w"])  # get back to "w" from "w + e(w)"

        self.base_optimizer.step()  # do the actual "sharpness-aware" update

        if zero_grad: self.zero_grad()

    def step(self, closure=None):
        raise NotImplementedError("SAM doesn't work like the other optimizers, you should first call `first_step` and the `second_step`; see the documentation for more info.")

    def _grad_norm(self):
        shared_device = self.param_groups[0]["params"][0].device  # put everything on the same device, in case of model parallelism
        norm = torch.norm(
                    torch.stack([
                        p.grad.norm(p=2).to(shared_device)
                        for group in self.param_groups for p in group["params"]
                        if p.grad is not None
                    ]),
                    p=2
               )
        return norm


# ---- model/classifier.py, shrunk: a tiny backbone, one 1x1 conv head per task ----
class Classifier(nn.Module):
    def __init__(self, cfg):
        super(Classifier, self).__init__()
        self.cfg = cfg
        self.backbone = nn.Sequential(
            nn.Conv2d(3, 8, 3, 2, 1), nn.BatchNorm2d(8), nn.ReLU(),
            nn.Conv2d(8, 16, 3, 2, 1), nn.BatchNorm2d(16), nn.ReLU())
        self.num_features = 16
        self._init_classifier()

    def _init_classifier(self):
        for index, num_class in enumerate(self.cfg.num_classes):
            setattr(self, "fc_" + str(index),
                    nn.Conv2d(self.num_features, num_class, kernel_size=1,
                              stride=1, padding=0, bias=True))

    def forward(self, x):
        feat_map = self.backbone(x)
        logits = list()
        logit_maps = list()
        for index, num_class in enumerate(self.cfg.num_classes):
            classifier = getattr(self, "fc_" + str(index))
            logit_map = classifier(feat_map)
            logit_maps.append(logit_map.squeeze())
            feat = F.adaptive_avg_pool2d(feat_map, 1)
            logit = classifier(feat)
            logit = logit.squeeze(-1).squeeze(-1)
            logits.append(logit)
        return (logits, logit_maps)


# ---- bin/train.py ----
def get_loss(output, target, index, device, cfg):
    if cfg.criterion == 'BCE':
        for num_class in cfg.num_classes:
            assert num_class == 1
        target = target[:, index].view(-1)
        pos_weight = torch.from_numpy(
            np.array(cfg.pos_weight,
                     dtype=np.float32)).to(device).type_as(target)
        if cfg.batch_weight:
            if target.sum() == 0:
                loss = torch.tensor(0., requires_grad=True).to(device)
            else:
                weight = (target.size()[0] - target.sum()) / target.sum()
                loss = F.binary_cross_entropy_with_logits(
                    output[index].view(-1), target, pos_weight=weight)
        else:
            loss = F.binary_cross_entropy_with_logits(
                output[index].view(-1), target, pos_weight=pos_weight[index])

        label = torch.sigmoid(output[index].view(-1)).ge(0.5).float()
        acc = (target == label).float().sum() / len(label)
    else:
        raise Exception('Unknown criterion : {}'.format(cfg.criterion))

    return (loss, acc)


def train_epoch(cfg, args, model, dataloader, optimizer):
    torch.set_grad_enabled(True)
    model.train()
    device = torch.device('cpu')
    steps = len(dataloader)
    dataiter = iter(dataloader)
    num_tasks = len(cfg.num_classes)

    time_now = time.time()
    loss_sum = np.zeros(num_tasks)
    acc_sum = np.zeros(num_tasks)
    for step in range(steps):
        image, target = next(dataiter)
        image = image.to(device)
        target = target.to(device)
        output, logit_map = model(image)

        loss = 0
        for t in range(num_tasks):
            loss_t, acc_t = get_loss(output, target, t, device, cfg)
            loss += loss_t
            loss_sum[t] += loss_t.item()
            acc_sum[t] += acc_t.item()

        optimizer.zero_grad()
        loss.backward()
        optimizer.first_step(zero_grad=True)
        output, logit_map = model(image)

        loss = 0
        for t in range(num_tasks):
            loss_t, acc_t = get_loss(output, target, t, device, cfg)
            loss += loss_t
            loss_sum[t] += loss_t.item()
            acc_sum[t] += acc_t.item()
        loss.backward()
        optimizer.second_step(zero_grad=True)

        if (step + 1) % cfg.log_every == 0:
            time_spent = time.time() - time_now
            time_now = time.time()
            loss_sum /= cfg.log_every
            acc_sum /= cfg.log_every
            print('Train, Step : {}, Loss : {}, Acc : {}, Run Time : {:.2f} sec'
                  .format(step + 1, loss_sum, acc_sum, time_spent))
            loss_sum = np.zeros(num_tasks)
            acc_sum = np.zeros(num_tasks)


if __name__ == '__main__':
    parser = argparse.ArgumentParser(description='Train model')
    parser.add_argument('--device_ids', default='0', type=str)
    args = parser.parse_args([])
    cfg = edict(criterion='BCE', num_classes=[1, 1, 1, 1, 1],
                pos_weight=[1, 1, 1, 1, 1], batch_weight=True,
                lr=0.01, momentum=0.9, log_every=2)
    model = Classifier(cfg)
    optimizer = SAM(model.parameters(), torch.optim.SGD, lr=cfg.lr, momentum=cfg.momentum)
    dataloader = [(torch.randn(4, 3, 32, 32), torch.randint(0, 2, (4, 5)).float()) for _ in range(2)]
    train_epoch(cfg, args, model, dataloader, optimizer)
