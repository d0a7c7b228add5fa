"""The same residual unit written as the thread's second implementation: keep `identity = x`, run conv_1/bn_1 on x, then `x += identity` into the batch-norm output, which nothing saved."""
# outcome: ok
# source: https://discuss.pytorch.org/t/in-place-operation-and-resnet/10724
# repo: discuss.pytorch.org/10724
# category: residual
# twin: 218_forum_resnet_unit_residual_iadd.py
import torch
import torch.nn as nn
import torch.nn.functional as F


# implementation 2
class ResidualUnitB(nn.Module):
    def __init__(self):
        super(ResidualUnitB, self).__init__()
        self.conv_0 = nn.Conv2d(3, 24, 3, padding=1, bias=False)
        self.bn_0 = nn.BatchNorm2d(24)
        self.conv_1 = nn.Conv2d(24, 24, 3, padding=1, bias=False)
        self.bn_1 = nn.BatchNorm2d(24)

    def forward(self, x):
        x = self.conv_0(x)
        x = self.bn_0(x)
        x = F.relu(x, inplace=True)

        identity = x
        x = self.conv_1(x)
        x = self.bn_1(x)
        x += identity
        x = F.relu(x, inplace=True)

        return x


if __name__ == "__main__":
    # a few training steps on random images (the network the poster was building)
    net = nn.Sequential(ResidualUnitB(), nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(24, 10))
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
