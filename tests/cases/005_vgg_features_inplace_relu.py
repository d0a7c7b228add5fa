"""VGG-style feature extractor built from a config list: Conv2d -> ReLU(inplace=True) -> MaxPool2d."""
# outcome: ok
import torch
import torch.nn as nn
import torch.nn.functional as F

CFG = [8, "M", 16, 16, "M"]


def make_layers(cfg, in_channels=3):
    layers = []
    for v in cfg:
        if v == "M":
            layers += [nn.MaxPool2d(kernel_size=2, stride=2)]
        else:
            layers += [nn.Conv2d(in_channels, v, kernel_size=3, padding=1), nn.ReLU(inplace=True)]
            in_channels = v
    return nn.Sequential(*layers)


class VGG(nn.Module):
    def __init__(self, num_classes=10):
        super().__init__()
        self.features = make_layers(CFG)
        self.classifier = nn.Sequential(
            nn.Linear(16 * 2 * 2, 32),
            nn.ReLU(True),
            nn.Dropout(),
            nn.Linear(32, num_classes),
        )

    def forward(self, x):
        x = self.features(x)
        x = torch.flatten(x, 1)
        return self.classifier(x)


def run() -> None:
    torch.manual_seed(0)
    model = VGG()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    images = torch.randn(4, 3, 8, 8)
    labels = torch.randint(0, 10, (4,))
    optimizer.zero_grad()
    loss = F.cross_entropy(model(images), labels)
    loss.backward()
    optimizer.step()
