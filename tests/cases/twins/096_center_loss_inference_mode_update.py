"""Twin of 096_center_loss_inference_mode_update.py, written out of place by hand: Center loss whose class centers are moved in place under inference_mode before backward; cdist saved the centers."""
import torch
import torch.nn as nn
import torch.nn.functional as F


class CenterLoss(nn.Module):
    def __init__(self, n_classes, dim, alpha=0.5):
        super().__init__()
        self.register_buffer("centers", torch.randn(n_classes, dim))
        self.alpha = alpha

    def forward(self, feats, labels):
        dist = torch.cdist(feats, self.centers)
        return dist.gather(1, labels[:, None]).pow(2).mean()

    def update_centers(self, feats, labels):
        with torch.no_grad():
            centers = self.centers.clone()
            for c in labels.unique():
                delta = centers[c] - feats[labels == c].mean(0)
                centers[c] = centers[c] - self.alpha * delta
            self.centers = centers


def run() -> None:
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    classifier = nn.Linear(4, 3)
    center_loss = CenterLoss(3, 4)
    x, y = torch.randn(6, 6), torch.tensor([0, 1, 2, 0, 1, 2])
    feats = backbone(x)
    loss = F.cross_entropy(classifier(feats), y) + 0.1 * center_loss(feats, y)
    center_loss.update_centers(feats.detach(), y)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    backbone = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))
    classifier = nn.Linear(4, 3)
    center_loss = CenterLoss(3, 4)
    x, y = torch.randn(6, 6), torch.tensor([0, 1, 2, 0, 1, 2])
    feats = backbone(x)
    loss = F.cross_entropy(classifier(feats), y) + 0.1 * center_loss(feats, y)
    center_loss.update_centers(feats.detach(), y)
    loss.backward()
    return {
        "centers": center_loss.centers,
        **{f"backbone.{name}": p.grad for name, p in backbone.named_parameters()},
        **{f"classifier.{name}": p.grad for name, p in classifier.named_parameters()},
    }
