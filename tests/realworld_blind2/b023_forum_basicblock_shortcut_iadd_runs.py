"""A forum user's ResNet BasicBlock adds the shortcut into the second BatchNorm's output with `out += self.shortcut(x)` and asks why it trains without an in-place error."""
# outcome: ok
# source: https://discuss.pytorch.org/t/when-inplace-operation-are-allowed-and-when-not/169583
# repo: discuss.pytorch.org/169583
# category: residual
import torch
import torch.nn as nn
import torch.nn.functional as F


class BasicBlock(nn.Module):
    expansion = 1
    def __init__(self, in_planes, planes, stride=1,
                 shortcut_enabled = True,
                 device='cuda'
                ):
        super(BasicBlock, self).__init__()

        self.shortcut_enabled = shortcut_enabled


        self.conv1    = nn.Conv2d(in_planes, planes,
                         kernel_size=3,
                         stride=stride, padding=1, bias=False,
                                  device=device)
        self.bn1      = nn.BatchNorm2d(planes, device=device)
        self.conv2    = nn.Conv2d(planes, planes,
                        kernel_size=3,
                        stride=1, padding=1, bias=False,
                        device=device)
        self.bn2      = nn.BatchNorm2d(planes, device=device)

        if self.shortcut_enabled:
            self.shortcut = nn.Sequential()
            if stride != 1 or in_planes != self.expansion*planes:
                self.shortcut = nn.Sequential(nn.Conv2d(in_planes, self.expansion*planes,kernel_size=1, stride=stride, bias=False, device=device),nn.BatchNorm2d(self.expansion*planes,device=device)
)

    def forward(self, x, verbose=0):
        out = F.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        if self.shortcut_enabled:
            out += self.shortcut(x)
        out = F.relu(out)
        return out


if __name__ == "__main__":
    net = nn.Sequential(
        nn.Conv2d(3, 8, 3, padding=1, bias=False),
        BasicBlock(8, 8, device='cpu'),
        BasicBlock(8, 16, stride=2, device='cpu'),
        BasicBlock(16, 16, shortcut_enabled=False, device='cpu'),
        nn.AdaptiveAvgPool2d(1),
        nn.Flatten(),
        nn.Linear(16, 10),
    )
    optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
    for step in range(2):
        loss = F.cross_entropy(net(torch.randn(4, 3, 16, 16)), torch.randint(0, 10, (4,)))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
    net.eval()
    with torch.no_grad():
        print(net(torch.randn(1, 3, 16, 16)).shape)
