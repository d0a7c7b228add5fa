"""A residual unit: F.relu(x, inplace=True), then `residual = self.conv_1(x)` and `x += residual`, writing into the tensor conv_1 saved for its weight gradient."""
# outcome: inplace-error
# source: https://discuss.pytorch.org/t/in-place-operation-and-resnet/10724
# repo: discuss.pytorch.org/10724
# category: residual
# twin: 219_forum_resnet_unit_residual_iadd_fixed.py
import torch
import torch.nn as nn
import torch.nn.functional as F


# implementation 1
class ResidualUnitA(nn.Module):
    def __init__(self):
        super(ResidualUnitA, self).__init__()
        self.conv_0 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(24)
        self.conv_1 = nn.Conv2d(24, 24, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(24)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        residual = self.conv_1(x)  # saved-by
        residual = self.bn_1(residual)
        x += residual  # error: IPL001
        x = F.relu(x, inplace=True)

        return x


if __name__ == "__main__":
    # a few training steps on random images (the network the poster was building)
    net = nn.Sequential(ResidualUnitA(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(24, 10))
    optimizer = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
    criterion = nn.CrossEntropyLoss()
    for step in range(2):
        inputs = torch.randn(4, 3, 16, 16)
        labels = torch.randint(0, 10, (4,))
        optimizer.zero_grad()
        loss = criterion(net(inputs), labels)
        loss.backward()
        optimizer.step()
        print(step, loss.item())
