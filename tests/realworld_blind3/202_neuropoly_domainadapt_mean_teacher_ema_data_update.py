"""neuropoly's domain-adaptation mean teacher: the student trains on a supervised Dice loss plus a consistency loss against the teacher's no_grad predictions, and after each optimizer.step() the teacher's detached parameters follow the student through in-place .data mul_/add_ updates."""
# outcome: ok
# source: https://github.com/neuropoly/domainadaptation/blob/master/domainadapt/main.py
# repo: neuropoly/domainadaptation
# category: iteration
# domainadapt/models.py and the training step of domainadapt/main.py (cmd_train); medicaltorch's
# dice_loss inlined, its data sets and the linked augmentation replaced by random slices.
import numpy as np

import torch
import torch.nn as nn
from torch.nn import Module
import torch.nn.functional as F


# ---- domainadapt/models.py ----

class DownConv(Module):
    def __init__(self, in_feat, out_feat, drop_rate=0.4, bn_momentum=0.1):
        super(DownConv, self).__init__()
        self.conv1 = nn.Conv2d(in_feat, out_feat, kernel_size=3, padding=1)
        self.conv1_bn = nn.GroupNorm(32, out_feat)
        self.conv1_drop = nn.Dropout2d(drop_rate)

        self.conv2 = nn.Conv2d(out_feat, out_feat, kernel_size=3, padding=1)
        self.conv2_bn = nn.GroupNorm(32, out_feat)
        self.conv2_drop = nn.Dropout2d(drop_rate)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = self.conv1_bn(x)
        x = self.conv1_drop(x)

        x = F.relu(self.conv2(x))
        x = self.conv2_bn(x)
        x = self.conv2_drop(x)
        return x


class UpConv(Module):
    def __init__(self, in_feat, out_feat, drop_rate=0.4, bn_momentum=0.1):
        super(UpConv, self).__init__()
        self.up1 = nn.Upsample(scale_factor=2, mode="bilinear", align_corners=False)
        self.downconv = DownConv(in_feat, out_feat, drop_rate, bn_momentum)

    def forward(self, x, y):
        x = self.up1(x)
        x = torch.cat([x, y], dim=1)
        x = self.downconv(x)
        return x


class Unet(Module):
    """A reference U-Net model.

    .. seealso::
        Ronneberger, O., et al (2015). U-Net: Convolutional
        Networks for Biomedical Image Segmentation
        ArXiv link: https://arxiv.org/abs/1505.04597
    """
    def __init__(self, drop_rate=0.4, bn_momentum=0.1):
        super(Unet, self).__init__()

        #Downsampling path
        self.conv1 = DownConv(1, 64, drop_rate, bn_momentum)
        self.mp1 = nn.MaxPool2d(2)

        self.conv2 = DownConv(64, 128, drop_rate, bn_momentum)
        self.mp2 = nn.MaxPool2d(2)

        self.conv3 = DownConv(128, 256, drop_rate, bn_momentum)
        self.mp3 = nn.MaxPool2d(2)

        # Bottom
        self.conv4 = DownConv(256, 256, drop_rate, bn_momentum)

        # Upsampling path
        self.up1 = UpConv(512, 256, drop_rate, bn_momentum)
        self.up2 = UpConv(384, 128, drop_rate, bn_momentum)
        self.up3 = UpConv(192, 64, drop_rate, bn_momentum)

        self.conv9 = nn.Conv2d(64, 1, kernel_size=3, padding=1)

    def forward(self, x):
        x1 = self.conv1(x)
        x2 = self.mp1(x1)

        x3 = self.conv2(x2)
        x4 = self.mp2(x3)

        x5 = self.conv3(x4)
        x6 = self.mp3(x5)

        # Bottom
        x7 = self.conv4(x6)

        # Up-sampling
        x8 = self.up1(x7, x5)
        x9 = self.up2(x8, x3)
        x10 = self.up3(x9, x1)

        x11 = self.conv9(x10)
        preds = torch.sigmoid(x11)

        return preds

# ---- medicaltorch/losses.py ----
def dice_loss(input, target):
    smooth = 1.0

    iflat = input.view(-1)
    tflat = target.view(-1)
    intersection = (iflat * tflat).sum()

    return - (2.0 * intersection + smooth) / (iflat.sum() + tflat.sum() + smooth)


# ---- domainadapt/main.py ----
def get_current_consistency_weight(weight, epoch, rampup):
    """Consistency ramp-up from https://arxiv.org/abs/1610.02242"""
    return weight * sigmoid_rampup(epoch, rampup)


def sigmoid_rampup(current, rampup_length):
    if rampup_length == 0:
        return 1.0
    else:
        current = np.clip(current, 0.0, rampup_length)
        phase = 1.0 - current / rampup_length
        return float(np.exp(-5.0 * phase * phase))


def update_ema_variables(model, ema_model, alpha, global_step):
    alpha = min(1 - 1 / (global_step + 1), alpha)
    for ema_param, param in zip(ema_model.parameters(), model.parameters()):
        ema_param.data.mul_(alpha).add_(1 - alpha, param.data)


def create_model(ctx, ema=False):
    drop_rate = ctx["drop_rate"]
    bn_momentum = ctx["bn_momentum"]
    model = Unet(drop_rate=drop_rate,
                 bn_momentum=bn_momentum)

    if ema:
        for param in model.parameters():
            param.detach_()

    return model


def linked_batch_augmentation(input_batch, preds_unsup):
    """stand-in for the medicaltorch elastic/affine teacher transform: the same slices, detached"""
    input_batch_cpu = input_batch.cpu().detach()
    preds_unsup_cpu = preds_unsup.cpu().detach()
    return {'input': [input_batch_cpu + 0.01 * torch.randn_like(input_batch_cpu),
                      preds_unsup_cpu]}


def cmd_train(ctx):
    global_step = 0

    num_epochs = ctx["num_epochs"]
    cons_weight = ctx["cons_weight"]
    initial_lr = ctx["initial_lr"]
    consistency_rampup = ctx["consistency_rampup"]
    weight_decay = ctx["weight_decay"]
    supervised_only = ctx["supervised_only"]

    consistency_loss_fn = F.mse_loss

    source_train_loader = [{"input": torch.randn(2, 1, 8, 8),
                            "gt": (torch.rand(2, 1, 8, 8) > 0.5).float()} for _ in range(2)]
    target_adapt_train_loader = [{"input": torch.randn(2, 1, 8, 8)} for _ in range(2)]

    model = create_model(ctx)

    if not supervised_only:
        model_ema = create_model(ctx, ema=True)
    else:
        model_ema = None

    optimizer = torch.optim.Adam(model.parameters(),
                                 lr=initial_lr,
                                 weight_decay=weight_decay)

    # Training loop
    for epoch in range(1, num_epochs + 1):
        consistency_weight = get_current_consistency_weight(cons_weight, epoch, consistency_rampup)

        # Train mode
        model.train()

        if not supervised_only:
            model_ema.train()

        composite_loss_total = 0.0
        class_loss_total = 0.0
        consistency_loss_total = 0.0

        num_steps = 0
        target_adapt_train_iter = iter(target_adapt_train_loader)

        for i, train_batch in enumerate(source_train_loader):
            # Supervised component --------------------------------------------
            train_input, train_gt = train_batch["input"], train_batch["gt"]
            preds_supervised = model(train_input)
            class_loss = dice_loss(preds_supervised, train_gt)

            if not supervised_only:

                # Unsupervised component ------------------------------------------
                try:
                    target_adapt_batch = next(target_adapt_train_iter)
                except StopIteration:
                    target_adapt_train_iter = iter(target_adapt_train_loader)
                    target_adapt_batch = next(target_adapt_train_iter)

                target_adapt_input = target_adapt_batch["input"]

                # Teacher forward
                with torch.no_grad():
                    teacher_preds_unsup = model_ema(target_adapt_input)

                linked_aug_batch = \
                    linked_batch_augmentation(target_adapt_input, teacher_preds_unsup)

                adapt_input_batch = linked_aug_batch['input'][0]
                teacher_preds_unsup_aug = linked_aug_batch['input'][1]

                # Student forward
                student_preds_unsup = model(adapt_input_batch)

                consistency_loss = consistency_weight * consistency_loss_fn(student_preds_unsup,
                                                                            teacher_preds_unsup_aug)
            else:
                consistency_loss = torch.FloatTensor([0.])

            composite_loss = class_loss + consistency_loss

            optimizer.zero_grad()
            composite_loss.backward()

            optimizer.step()

            composite_loss_total += composite_loss.item()
            consistency_loss_total += consistency_loss.item()
            class_loss_total += class_loss.item()

            num_steps += 1
            global_step += 1

            if not supervised_only:
                if epoch <= ctx["ema_late_epoch"]:
                    update_ema_variables(model, model_ema, ctx["ema_alpha"], global_step)
                else:
                    update_ema_variables(model, model_ema, ctx["ema_alpha_late"], global_step)

        print("epoch", epoch, "loss", composite_loss_total / num_steps)


if __name__ == "__main__":
    ctx = {"num_epochs": 2, "cons_weight": 3.0, "initial_lr": 1e-3, "consistency_rampup": 5,
           "weight_decay": 1e-5, "supervised_only": False, "drop_rate": 0.5, "bn_momentum": 0.9,
           "ema_late_epoch": 1, "ema_alpha": 0.99, "ema_alpha_late": 0.999}
    cmd_train(ctx)
