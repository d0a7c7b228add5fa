"""Twin of 017_out_arg_normalize_batch.py, written out of place by hand: Normalizes the image batch with out= into itself after the forward; the first Conv2d saved that batch."""
import torch
import torch.nn as nn
import torch.nn.functional as F

MEAN = torch.tensor([0.485, 0.456, 0.406]).view(1, 3, 1, 1)
STD = torch.tensor([0.229, 0.224, 0.225]).view(1, 3, 1, 1)


class TinyConvNet(nn.Module):
    def __init__(self, num_classes=4):
        super().__init__()
        self.conv = nn.Conv2d(3, 6, 3, padding=1)
        self.bn = nn.BatchNorm2d(6)
        self.fc = nn.Linear(6, num_classes)

    def forward(self, images):
        x = F.relu(self.bn(self.conv(images)))
        return self.fc(x.mean(dim=(2, 3)))


def run() -> None:
    torch.manual_seed(0)
    model = TinyConvNet()
    images = torch.rand(2, 3, 8, 8)
    labels = torch.tensor([0, 3])
    logits = model(images)
    # "normalize for the next epoch" into a new tensor
    images = images - MEAN
    loss = F.cross_entropy(logits, labels)
    loss.backward()


def grads() -> dict[str, torch.Tensor]:
    torch.manual_seed(0)
    model = TinyConvNet()
    images = torch.rand(2, 3, 8, 8)
    labels = torch.tensor([0, 3])
    logits = model(images)
    loss = F.cross_entropy(logits, labels)
    loss.backward()
    return {name: p.grad for name, p in model.named_parameters()}
