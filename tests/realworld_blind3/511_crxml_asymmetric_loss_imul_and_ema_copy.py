"""Chest X-ray multilabel training: the asymmetric loss scales its per-label log-likelihood in place (loss *= (1 - pt).pow(gamma)) before the mean, the label-graph refiner adds a coupling message to the logits, and after each optimizer step a ModelEMA copies the blended weights into its own state dict under no_grad."""
# outcome: ok
# source: https://github.com/utkarsh231/Learning-Sparse-Label-Couplings-for-Multilabel-Chest-X-Ray-Diagnosis/blob/07724942e61a9c5ce0babf649723aad68df5e8ac/crxml/losses.py
# repo: utkarsh231/Learning-Sparse-Label-Couplings-for-Multilabel-Chest-X-Ray-Diagnosis
# category: trainer
# crxml/losses.py, models/refiner.py, models/ema.py and engine.py's train_one_epoch as in the
# repository; the timm backbone is stood in by a small CNN, the data loader by random images and
# labels, amp off on the CPU.
from __future__ import annotations
import copy
import math
import time
import numpy as np
import torch
import torch.nn as nn
from torch.cuda.amp import autocast, GradScaler


# ---- crxml/models/backbone.py (timm not installed here: a small CNN with the same call) ----
def create_backbone(model_name: str, num_classes: int, drop_rate: float = 0.4, pretrained: bool = True) -> nn.Module:
    """Create a timm backbone with desired classifier head.
    """
    model = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(inplace=True),
        nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Dropout(drop_rate), nn.Linear(8, num_classes),
    )
    return model


# ---- crxml/models/refiner.py ----
class LabelGraphRefiner(nn.Module):
    """Learn a dense label coupling matrix A (with zero diagonal) and refine logits.
    logits' = logits + alpha * sigmoid(logits) @ A
    """
    def __init__(self, num_classes: int, alpha: float = 0.3, l1: float = 1e-3):
        super().__init__()
        self.A = nn.Parameter(torch.zeros(num_classes, num_classes))
        self.alpha = alpha
        self.l1 = l1

    def forward(self, logits):
        A = self.A - torch.diag(torch.diag(self.A))  # zero diagonal
        p = torch.sigmoid(logits)                    # B x C
        msg = p @ A                                  # B x C
        refined = logits + self.alpha * msg
        reg = self.l1 * (A.abs().sum())
        return refined, reg


# ---- crxml/models/ema.py ----
class ModelEMA:
    def __init__(self, model, decay: float = 0.999):
        self.ema = copy.deepcopy(model).eval()
        for p in self.ema.parameters():
            p.requires_grad_(False)
        self.decay = decay

    @torch.no_grad()
    def update(self, model):
        msd = model.state_dict()
        for k, v in self.ema.state_dict().items():
            if k in msd:
                v.copy_(self.decay * v + (1.0 - self.decay) * msd[k])


# ---- crxml/losses.py ----
class AsymmetricLoss(nn.Module):
    def __init__(self, gamma_pos: float = 0.0, gamma_neg: float = 4.0, clip: float = 0.05, eps: float = 1e-8):
        super().__init__()
        self.gp, self.gn, self.clip, self.eps = gamma_pos, gamma_neg, clip, eps

    def forward(self, logits, targets):
        xs_pos = torch.sigmoid(logits)
        xs_neg = 1.0 - xs_pos
        if self.clip and self.clip > 0:
            xs_neg = (xs_neg + self.clip).clamp(max=1)
        log_pos = torch.log(xs_pos.clamp(min=self.eps))
        log_neg = torch.log(xs_neg.clamp(min=self.eps))
        loss = targets * log_pos + (1 - targets) * log_neg
        pt = xs_pos * targets + xs_neg * (1 - targets)
        gamma = self.gp * targets + self.gn * (1 - targets)
        loss *= (1 - pt).pow(gamma)
        return -loss.mean()


# ---- crxml/engine.py ----
def train_one_epoch(model, refiner, loader, optimizer, scaler: GradScaler, criterion, device,
                    ema=None, scheduler=None, amp: bool = True):
    model.train()
    if refiner is not None:
        refiner.train()
    tot = 0.0
    for x, y in loader:
        x = x.to(device, non_blocking=True)
        y = y.to(device, non_blocking=True)

        optimizer.zero_grad(set_to_none=True)
        with autocast(enabled=amp):
            logits = model(x)
            if refiner is not None:
                logits, reg = refiner(logits)
                loss_sup = criterion(logits, y)
                loss = loss_sup + reg
            else:
                loss = criterion(logits, y)

        if not torch.isfinite(loss):
            print("[WARN] Non-finite loss detected. Skipping batch.")
            continue

        scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(list(model.parameters()) + (list(refiner.parameters()) if refiner else []), max_norm=1.0)
        scaler.step(optimizer)
        scaler.update()
        if scheduler is not None:
            scheduler.step()
        if ema is not None:
            ema.update(model)

        tot += float(loss.detach().cpu())
    return tot / max(1, len(loader))


if __name__ == "__main__":
    device = torch.device("cpu")
    num_classes = 5
    model = create_backbone("densenet121", num_classes=num_classes, pretrained=False).to(device)
    refiner = LabelGraphRefiner(num_classes).to(device)
    criterion = AsymmetricLoss()
    optimizer = torch.optim.AdamW(list(model.parameters()) + list(refiner.parameters()), lr=1e-3, weight_decay=1e-4)
    scaler = GradScaler(enabled=False)
    ema = ModelEMA(model, decay=0.99)
    loader = [(torch.randn(4, 3, 16, 16), torch.randint(0, 2, (4, num_classes)).float()) for _ in range(3)]
    for epoch in range(2):
        print(epoch, train_one_epoch(model, refiner, loader, optimizer, scaler, criterion, device,
                                     ema=ema, amp=False))
